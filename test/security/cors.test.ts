import { productionEnv, startTestServer, type TestServer } from '../helpers/server.js';
import { sessionTokenFor } from '../helpers/stripe-fixtures.js';

/**
 * Browsers: pages at the origins of an app's allowed callback URL patterns may call Tollgate (and read
 * the rate-limit headers); other origins get no grant; an API key sent from a foreign page is refused.
 */
let server: TestServer;
let appId: string;
let apiKey: string;
let sessionToken: string;

const APP_ORIGIN = 'https://shop.example.com';
const WILDCARD_ORIGIN = 'https://eu.brand.example.org:8443';
const FOREIGN_ORIGIN = 'https://evil.example.net';
const EXPOSED =
  'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Tollgate-Entitlements-Version';

beforeAll(async () => {
  server = await startTestServer();
  ({ appId, apiKey } = await server.createApp({
    allowedCallbackUrls: `${APP_ORIGIN}/auth/callback\nhttps://*.brand.example.org:*/welcome`,
  }));
  const created = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email: 'browser@example.com' });
  sessionToken = await sessionTokenFor(server, appId, created.body.id);
});

afterAll(async () => {
  await server?.close();
});

describe('CORS', () => {
  it('answers a preflight from an allowed origin without spending a budget', async () => {
    const res = await server.http
      .options(`/v1/apps/${appId}/auth/session`)
      .set('origin', APP_ORIGIN)
      .set('access-control-request-method', 'GET')
      .set('access-control-request-headers', 'authorization');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(res.headers['access-control-allow-methods']).toBe('GET, POST, PATCH, DELETE');
    expect(res.headers['access-control-allow-headers']).toBe('Authorization, Content-Type, Idempotency-Key');
    expect(res.headers['access-control-max-age']).toBe('600');
    expect(res.headers.vary).toMatch(/Origin/);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('grants a preflight of a path naming no app when some app allows the origin (wildcard host and port)', async () => {
    const res = await server.http
      .options('/v1/entitlements/check/export')
      .set('origin', WILDCARD_ORIGIN)
      .set('access-control-request-method', 'GET');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(WILDCARD_ORIGIN);
  });

  it('grants a session request from an allowed origin and exposes the rate-limit headers', async () => {
    const res = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('origin', APP_ORIGIN)
      .set('authorization', `Bearer ${sessionToken}`);
    expect(res.status).toBe(200);
    expect(res.body.customer.email).toBe('browser@example.com');
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(res.headers['access-control-expose-headers']).toBe(EXPOSED);
    expect(res.headers['x-ratelimit-limit']).toBe('100');
    const check = await server.http
      .get('/v1/entitlements/check/export')
      .set('origin', APP_ORIGIN)
      .set('authorization', `Bearer ${sessionToken}`);
    expect(check.status).toBe(200);
    expect(check.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
  });

  it('gives a foreign origin no grant, for the preflight and the request', async () => {
    const preflight = await server.http
      .options(`/v1/apps/${appId}/auth/session`)
      .set('origin', FOREIGN_ORIGIN)
      .set('access-control-request-method', 'GET');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(preflight.headers['access-control-allow-methods']).toBeUndefined();
    const res = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('origin', FOREIGN_ORIGIN)
      .set('authorization', `Bearer ${sessionToken}`);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-expose-headers']).toBeUndefined();
  });

  it("gives another app's allowed origin no grant for this app's session", async () => {
    const other = await server.createApp({ allowedCallbackUrls: 'https://other.example.com/*' });
    expect(other.appId).not.toBe(appId);
    const res = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('origin', 'https://other.example.com')
      .set('authorization', `Bearer ${sessionToken}`);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses an API key sent from a foreign page with 403, allowed origin or not, and counts it', async () => {
    for (const origin of [FOREIGN_ORIGIN, APP_ORIGIN]) {
      const res = await server.http
        .get('/v1/customers')
        .set('origin', origin)
        .set('authorization', `Bearer ${apiKey}`);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({
        statusCode: 403,
        message: 'API keys must not be used from a browser page: call Tollgate from your server',
        error: 'Forbidden',
      });
      expect(res.headers['x-ratelimit-limit']).toBe('1000');
    }
    const fromServer = await server.http.get('/v1/customers').set('authorization', `Bearer ${apiKey}`);
    expect(fromServer.status).toBe(200);
  });

  it("keeps Tollgate's own pages working: a same-origin request with the admin token", async () => {
    const res = await server.http
      .post('/graphql')
      .set('origin', new URL(server.url).origin)
      .set('authorization', `Bearer ${server.adminToken}`)
      .send({ query: '{ apps { id } }' });
    expect(res.status).toBe(200);
    expect(res.body.data.apps.some((a: { id: string }) => a.id === appId)).toBe(true);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('allows any http://localhost origin in development', async () => {
    const res = await server.http
      .options(`/v1/apps/${appId}/auth/magic-link`)
      .set('origin', 'http://localhost:5173')
      .set('access-control-request-method', 'POST');
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });
});

describe('CORS in production', () => {
  let production: TestServer;
  let productionApp: string;

  beforeAll(async () => {
    production = await startTestServer({ env: productionEnv({ TRUST_PROXY: 'loopback' }) });
    productionApp = (await production.createApp({ allowedCallbackUrls: 'http://localhost:3000/callback' }))
      .appId;
  });

  afterAll(async () => {
    await production?.close();
  });

  // As the TLS-terminating proxy says (the helper adds this only to the documented methods).
  const preflight = (origin: string) =>
    production.http
      .options(`/v1/apps/${productionApp}/auth/magic-link`)
      .set('x-forwarded-proto', 'https')
      .set('origin', origin)
      .set('access-control-request-method', 'POST');

  it('grants a localhost origin only when a pattern names it', async () => {
    const other = await preflight('http://localhost:5173');
    expect(other.status).toBe(204);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const named = await preflight('http://localhost:3000');
    expect(named.status).toBe(204);
    expect(named.headers['access-control-allow-origin']).toBe('http://localhost:3000');
  });

  it("treats PUBLIC_BASE_URL's origin as Tollgate's own: the admin token keeps working from it", async () => {
    const res = await production.http
      .post('/graphql')
      .set('origin', 'https://billing.example.com')
      .set('authorization', `Bearer ${production.adminToken}`)
      .send({ query: '{ apps { id } }' });
    expect(res.status).toBe(200);
    const foreign = await production.http
      .post('/graphql')
      .set('origin', 'https://evil.example.net')
      .set('authorization', `Bearer ${production.adminToken}`)
      .send({ query: '{ apps { id } }' });
    expect(foreign.status).toBe(403);
  });
});
