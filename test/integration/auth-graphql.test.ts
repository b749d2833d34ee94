import { createAuthApp, tokenFromDevMailbox, uniqueEmail } from '../helpers/auth-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const REQUEST = `mutation($appId: ID!, $email: String!, $redirectUrl: String!) {
  requestMagicLink(appId: $appId, email: $email, redirectUrl: $redirectUrl)
}`;
const VERIFY = `mutation($appId: ID!, $token: String!) {
  verifyMagicLink(appId: $appId, token: $token) {
    sessionToken
    customer { id email name metadata }
    entitlements { planName features }
  }
}`;
const SESSION = `query($appId: ID!) {
  session(appId: $appId) { customer { id email name metadata } entitlements { planName features } organizationId orgRole }
}`;
const REVOKE = 'mutation { revokeSession }';

describe('customer login over GraphQL', () => {
  it('requests a link, verifies it, reads the session and revokes it, over the same core as REST', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail();
    const requested = await server.graphql(REQUEST, {
      appId,
      email,
      redirectUrl: 'https://app.example.com/cb',
    });
    expect(requested.body).toEqual({ data: { requestMagicLink: true } });

    const token = await tokenFromDevMailbox(server, email);
    const verified = await server.graphql(VERIFY, { appId, token });
    expect(verified.body.errors).toBeUndefined();
    const login = verified.body.data.verifyMagicLink;
    expect(login).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_/),
      customer: { id: expect.stringMatching(/^cus_/), email, name: null, metadata: {} },
      entitlements: { planName: null, features: {} },
    });

    const again = await server.graphql(VERIFY, { appId, token });
    expect(again.body.errors?.[0]).toMatchObject({
      message: 'Invalid, used or expired magic link token',
      extensions: { code: 'UNAUTHENTICATED', statusCode: 401 },
    });

    const session = await server.graphql(SESSION, { appId }, login.sessionToken);
    expect(session.body).toEqual({
      data: {
        session: {
          customer: login.customer,
          entitlements: { planName: null, features: {} },
          organizationId: null,
          orgRole: null,
        },
      },
    });

    const revoked = await server.graphql(REVOKE, {}, login.sessionToken);
    expect(revoked.body).toEqual({ data: { revokeSession: true } });
    const afterRevoke = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${login.sessionToken}`);
    expect(afterRevoke.status).toBe(401);
  });

  it('rejects what REST rejects, with the same messages', async () => {
    const { appId, apiKey } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
    });
    const badEmail = await server.graphql(REQUEST, {
      appId,
      email: 'a@x.com,b@y.com',
      redirectUrl: 'https://app.example.com/cb',
    });
    expect(badEmail.body.errors?.[0]).toMatchObject({
      message: 'email: must be a valid e-mail address',
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
    });
    const badRedirect = await server.graphql(REQUEST, {
      appId,
      email: uniqueEmail(),
      redirectUrl: 'https://evil.net/',
    });
    expect(badRedirect.body.errors?.[0]).toMatchObject({
      message: 'redirectUrl: does not match any allowed callback URL of this app',
      extensions: { statusCode: 400 },
    });
    const unknownApp = await server.graphql(VERIFY, { appId: 'app_nope', token: 'tg_ml_x' });
    expect(unknownApp.body.errors?.[0]).toMatchObject({ extensions: { code: 'NOT_FOUND', statusCode: 404 } });

    const withApiKey = await server.graphql(SESSION, { appId }, apiKey);
    expect(withApiKey.body.errors?.[0]).toMatchObject({ extensions: { code: 'FORBIDDEN', statusCode: 403 } });
    const anonymous = await server.graphql(REVOKE, {});
    expect(anonymous.body.errors?.[0]).toMatchObject({
      extensions: { code: 'UNAUTHENTICATED', statusCode: 401 },
    });
  });

  it.each([
    ['*', 'must look like'],
    ['https://*', 'registrable domain'],
    ['https://*.com/*', 'registrable domain'],
    ['https://*.co.uk/*', 'registrable domain'],
    ['ftp://files.example.com/*', 'must look like'],
    ['https://user@app.example.com/*', 'user info is not allowed'],
  ])('createApp and updateAppSettings refuse the callback pattern %s', async (pattern, reason) => {
    const created = await server.graphql(
      'mutation($input: CreateAppInput!) { createApp(input: $input) { app { id } } }',
      { input: { name: 'hostile', allowedCallbackUrls: `https://ok.example.com/*\n${pattern}` } },
      server.adminToken,
    );
    expect(created.body.errors?.[0].extensions).toEqual({
      code: 'BAD_USER_INPUT',
      statusCode: 400,
      fields: ['allowedCallbackUrls'],
    });
    expect(created.body.errors?.[0].message).toContain(`allowedCallbackUrls: invalid pattern "${pattern}"`);
    expect(created.body.errors?.[0].message).toContain(reason);

    const { appId } = await createAuthApp(server);
    const updated = await server.graphql(
      'mutation($appId: ID!, $input: AppSettingsInput!) { updateAppSettings(appId: $appId, input: $input) { id } }',
      { appId, input: { allowedCallbackUrls: pattern } },
      server.adminToken,
    );
    expect(updated.body.errors?.[0].extensions).toEqual({
      code: 'BAD_USER_INPUT',
      statusCode: 400,
      fields: ['allowedCallbackUrls'],
    });
    expect(updated.body.errors?.[0].message).toContain(reason);
  });
});
