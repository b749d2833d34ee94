import { randomBytes } from 'node:crypto';
import querystring from 'node:querystring';
import fc from 'fast-check';
import { createAuthApp } from '../helpers/auth-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { productionEnv, startTestServer, type TestServer } from '../helpers/server.js';
import { logCollector, rawRequest, rawSocket } from './helpers.js';

let server: TestServer;
let logs: ReturnType<typeof logCollector>;
let appId: string;

beforeAll(async () => {
  logs = logCollector();
  server = await startTestServer({ env: { LOG_LEVEL: 'debug' }, logDestination: logs.stream });
  ({ appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' }));
});
afterAll(async () => {
  await server.close();
});

/** A fresh secret: random hex, which no encoding step changes, behind an optional Tollgate prefix. */
const secret = (prefix = '') => `${prefix}S3cr3t${randomBytes(12).toString('hex')}`;

/** Every request's log line, found by its request id. */
async function logLineOf(requestId: string): Promise<string> {
  return eventually(
    () =>
      logs
        .text()
        .split('\n')
        .find((line) => line.includes(`"id":"${requestId}"`)),
    { what: `the log line of request ${requestId}`, timeoutMs: 5000 },
  );
}

/** A log line leaks `value` if it holds it as written, or once its URL is percent-decoded. */
function expectNoLeak(text: string, value: string) {
  expect(text).not.toContain(value);
  expect(querystring.unescape(text)).not.toContain(value);
  expect(text.toLowerCase()).not.toContain(value.toLowerCase());
}

/** Spells a parameter name another way, as the query parser still reads it: case, percent-escapes, brackets. */
const nameSpelling = fc
  .record({
    base: fc.constantFrom(
      'token',
      'api_key',
      'apiKey',
      'key',
      'secret',
      'client_secret',
      'password',
      'signature',
      'session_token',
      'x-api-key',
      'magicLinkToken',
      'access_token',
    ),
    upper: fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }),
    escaped: fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }),
    suffix: fc.constantFrom('', '[]', '[0]', '[a]', '%5B%5D', '%5b0%5d'),
  })
  .map(({ base, upper, escaped, suffix }) => {
    const name = [...base]
      .map((c, i) => (upper[i] ? c.toUpperCase() : c))
      .map((c, i) => (escaped[i] ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c))
      .join('');
    return name + suffix;
  });

describe('no secret reaches a log line', () => {
  it('redacts a secret-named query parameter in any spelling, alone or repeated (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        nameSpelling,
        fc.boolean(),
        fc.constantFrom(`/v1/apps/{app}/auth/verify`, '/v1/customers', '/graphql', '/nowhere'),
        async (name, repeated, template) => {
          const value = secret();
          const requestId = `redact-${randomBytes(6).toString('hex')}`;
          const query = repeated ? `${name}=${value}&limit=1&${name}=${value}` : `limit=1&${name}=${value}`;
          await rawRequest(server, {
            method: 'GET',
            path: `${template.replace('{app}', appId)}?${query}`,
            headers: { 'x-request-id': requestId },
          });
          const line = await logLineOf(requestId);
          expect(line).toContain('limit=1');
          expectNoLeak(line, value);
        },
      ),
      { numRuns: 80 },
    );
  });

  it("redacts Tollgate's own secrets under any parameter name, escaped or not", async () => {
    for (const prefix of ['tg_ml_', 'tg_sk_', 'tg_st_', 'tg_admin_']) {
      const value = secret(prefix);
      const escaped = [...value].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
      for (const query of [`t=${value}`, `q=${escaped}`, `${value}`, `x[]=${value}`]) {
        const requestId = `value-${randomBytes(6).toString('hex')}`;
        await rawRequest(server, {
          method: 'GET',
          path: `/v1/apps/${appId}/auth/verify?${query}`,
          headers: { 'x-request-id': requestId },
        });
        expectNoLeak(await logLineOf(requestId), value);
      }
      const requestId = `path-${randomBytes(6).toString('hex')}`;
      await rawRequest(server, {
        method: 'GET',
        path: `/v1/customers/${value}`,
        headers: { 'x-request-id': requestId },
      });
      expectNoLeak(await logLineOf(requestId), value);
    }
  });

  it('never logs the Authorization, Cookie or Stripe-Signature header, nor a body', async () => {
    const values = {
      authorization: secret('tg_sk_'),
      cookie: secret(),
      signature: secret(),
      body: secret('tg_ml_'),
    };
    const sends: { method: string; path: string; headers: Record<string, string>; body?: string }[] = [
      { method: 'GET', path: '/v1/customers', headers: { authorization: `Bearer ${values.authorization}` } },
      { method: 'GET', path: '/v1/customers', headers: { AUTHORIZATION: `Bearer ${values.authorization}` } },
      { method: 'GET', path: '/v1/customers', headers: { cookie: `session=${values.cookie}` } },
      {
        method: 'POST',
        path: '/v1/webhooks/stripe',
        headers: { 'stripe-signature': `t=1,v1=${values.signature}`, 'content-type': 'application/json' },
        body: '{}',
      },
      {
        method: 'POST',
        path: `/v1/apps/${appId}/auth/verify`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: values.body }),
      },
      {
        method: 'POST',
        path: `/v1/apps/${appId}/auth/verify`,
        headers: { 'content-type': 'application/json' },
        body: `{"token":"${values.body}"`,
      },
    ];
    for (const send of sends) {
      const requestId = `header-${randomBytes(6).toString('hex')}`;
      await rawRequest(server, { ...send, headers: { ...send.headers, 'x-request-id': requestId } });
      await logLineOf(requestId);
    }
    for (const value of Object.values(values)) expectNoLeak(logs.text(), value);
  });

  it('logs a request refused by the HTTP parser without its bytes', async () => {
    const value = secret('tg_sk_');
    await rawSocket(
      server,
      `GET /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${value}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    await eventually(
      () => logs.text().includes('malformed request refused by the HTTP parser') || undefined,
      { what: 'the parser refusal to be logged', timeoutMs: 5000 },
    );
    expectNoLeak(logs.text(), value);
  });
});

describe('no personal value reaches an access log line', () => {
  it('logs a production lookup by e-mail with the address redacted, paging kept', async () => {
    const prodLogs = logCollector();
    const prod = await startTestServer({
      env: productionEnv({ TRUST_PROXY: 'loopback', LOG_LEVEL: 'info' }),
      logDestination: prodLogs.stream,
    });
    try {
      const { apiKey } = await prod.createApp();
      const email = `Log.Lookup+${randomBytes(6).toString('hex')}@Example.com`;
      const created = await prod.http
        .post('/v1/customers')
        .set('authorization', `Bearer ${apiKey}`)
        .send({ email, name: 'Ada Lookup' });
      expect(created.status).toBe(201);
      const requestId = `lookup-${randomBytes(6).toString('hex')}`;
      const found = await prod.http
        .get(`/v1/customers?email=${encodeURIComponent(email)}&limit=5&offset=0`)
        .set('authorization', `Bearer ${apiKey}`)
        .set('x-request-id', requestId);
      expect(found.status).toBe(200);
      expect(found.body.data.map((c: { id: string }) => c.id)).toEqual([created.body.id]);
      const line = await eventually(
        () =>
          prodLogs
            .text()
            .split('\n')
            .find((l) => l.includes(`"id":"${requestId}"`)),
        { what: 'the lookup to be logged', timeoutMs: 5000 },
      );
      expect(JSON.parse(line).req.url).toBe('/v1/customers?email=%5Bredacted%5D&limit=5&offset=0');
      expectNoLeak(prodLogs.text(), email);
      expectNoLeak(prodLogs.text(), email.split('@')[0]!);
    } finally {
      await prod.close();
    }
  });
});
