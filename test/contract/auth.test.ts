import { createAuthApp, tokenFromDevMailbox, uniqueEmail } from '../helpers/auth-fixtures.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe('customer authentication responses match schema/openapi.yaml', () => {
  it('POST …/auth/magic-link: 200, 400, 404, 429', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail();
    const path = `/v1/apps/${appId}/auth/magic-link`;
    for (let i = 0; i < 5; i++) {
      const ok = await server.http.post(path).send({ email, redirectUrl: 'https://app.example.com/cb' });
      expect(ok.status).toBe(200);
    }
    const limited = await server.http.post(path).send({ email, redirectUrl: 'https://app.example.com/cb' });
    expect(limited.status).toBe(429);
    const bad = await server.http.post(path).send({ email, redirectUrl: 'https://evil.net/' });
    expect(bad.status).toBe(400);
    const unknown = await server.http
      .post('/v1/apps/app_unknown/auth/magic-link')
      .send({ email, redirectUrl: 'https://app.example.com/cb' });
    expect(unknown.status).toBe(404);
  });

  it('GET and POST …/auth/verify, GET …/auth/session: success and error answers', async () => {
    const { appId, apiKey } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
      organizationsEnabled: true,
    });
    const email = uniqueEmail();
    await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.com/cb' })
      .expect(200);
    const token = await tokenFromDevMailbox(server, email);
    const verifyPath = `/v1/apps/${appId}/auth/verify`;

    const checks = [
      [await server.http.get(verifyPath).query({ token, redirect: 'true' }), 302],
      [await server.http.get(verifyPath).query({ token }), 400],
      [await server.http.get(verifyPath).query({ token: 'tg_ml_nope', redirect: 'true' }), 401],
      [await server.http.post(verifyPath).send({}), 400],
      [await server.http.post(verifyPath).send({ token: 'tg_ml_nope' }), 401],
    ] as const;
    for (const [res, status] of checks) {
      expect(res.status).toBe(status);
    }

    const verified = await server.http.post(verifyPath).send({ token });
    expect(verified.status).toBe(200);

    const sessionPath = `/v1/apps/${appId}/auth/session`;
    const session = await server.http
      .get(sessionPath)
      .set('authorization', `Bearer ${verified.body.sessionToken}`);
    expect(session.status).toBe(200);

    const fixtures = new Fixtures(server, appId);
    const organizationId = await fixtures.organization({ [verified.body.customer.id]: 'owner' });
    const orgSession = await server.http
      .get(sessionPath)
      .set('authorization', `Bearer ${await fixtures.session(verified.body.customer.id, organizationId)}`);
    expect(orgSession.status).toBe(200);
    expect(orgSession.body.orgRole).toBe('owner');

    const forbidden = await server.http.get(sessionPath).set('authorization', `Bearer ${apiKey}`);
    expect(forbidden.status).toBe(403);
    const anonymous = await server.http.get(sessionPath);
    expect(anonymous.status).toBe(401);
  });
});
