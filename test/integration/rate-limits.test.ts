import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { newId } from '../../src/core/ids.js';
import { hashSecret, randomSecret } from '../../src/core/tokens.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'] as const;

/** Asserts the three headers, with the reset a Unix time in seconds within the coming window. */
function expectLimitHeaders(res: { headers: Record<string, string> }, limit: number, remaining?: number) {
  for (const name of HEADERS) expect(res.headers[name]).toMatch(/^\d+$/);
  expect(Number(res.headers['x-ratelimit-limit'])).toBe(limit);
  if (remaining !== undefined) expect(Number(res.headers['x-ratelimit-remaining'])).toBe(remaining);
  const reset = Number(res.headers['x-ratelimit-reset']);
  const now = Math.floor(Date.now() / 1000);
  expect(reset).toBeGreaterThanOrEqual(now);
  expect(reset).toBeLessThanOrEqual(now + 61);
}

/** Creates a customer of the app and a session token for it, as a completed login would. */
async function sessionTokenFor(server: TestServer, apiKey: string, appId: string): Promise<string> {
  const created = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email: `rate-${Date.now()}-${Math.random()}@example.com` });
  expect(created.status).toBe(201);
  const token = randomSecret('tg_st_');
  await server.deps.orm.em
    .fork()
    .getConnection()
    .execute(
      `insert into session (id, app_id, customer_id, token_hash, expires_at) values (?, ?, ?, ?, now() + interval '1 day')`,
      [newId('ses'), appId, created.body.id, hashSecret(token)],
    );
  return token;
}

const TYPENAME = JSON.stringify({ query: '{ __typename }' });

/** Fires `count` GraphQL requests at once (each one an HTTP request) and returns their statuses. */
async function burst(url: string, count: number, token: string): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: TYPENAME,
      });
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

describe('rate limits with the default budgets', () => {
  let server: TestServer;
  let app: { appId: string; apiKey: string };
  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_IP: '60' } });
    app = await server.createApp();
  });
  afterAll(async () => {
    await server.close();
  });

  it('puts the headers on a successful REST answer, counting down per API key', async () => {
    const fresh = await server.createApp();
    const first = await server.http.get('/v1/customers').set('authorization', `Bearer ${fresh.apiKey}`);
    expect(first.status).toBe(200);
    expectLimitHeaders(first, 1000, 999);
    const second = await server.http.get('/v1/customers').set('authorization', `Bearer ${fresh.apiKey}`);
    expectLimitHeaders(second, 1000, 998);
    expect(Number(second.headers['x-ratelimit-reset'])).toBe(Number(first.headers['x-ratelimit-reset']));
  });

  it('puts the headers on 400, 404 and GraphQL answers', async () => {
    const auth = `Bearer ${app.apiKey}`;
    const malformed = await server.http
      .post('/v1/customers')
      .set('authorization', auth)
      .set('content-type', 'application/json')
      .send('{"email":');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      statusCode: 400,
      message: 'Malformed JSON in request body',
      error: 'Bad Request',
    });
    expectLimitHeaders(malformed, 1000);

    const invalid = await server.http
      .post('/v1/customers')
      .set('authorization', auth)
      .send({ email: 'nope' });
    expect(invalid.status).toBe(400);
    expectLimitHeaders(invalid, 1000);

    const missing = await server.http.get('/v1/customers/cus_doesnotexist').set('authorization', auth);
    expect(missing.status).toBe(404);
    expectLimitHeaders(missing, 1000);

    const unknownRoute = await server.http.get('/v1/no-such-thing').set('authorization', auth);
    expect(unknownRoute.status).toBe(404);
    expectLimitHeaders(unknownRoute, 1000);

    const graphql = await server.http
      .post('/graphql')
      .set('authorization', auth)
      .send({ query: '{ __typename }' });
    expect(graphql.status).toBe(200);
    expect(graphql.body).toEqual({ data: { __typename: 'Query' } });
    expectLimitHeaders(graphql, 1000);
  });

  it('puts the headers on a 401 and counts rejected credentials per client IP', async () => {
    const unknownKey = await server.http.get('/v1/customers').set('authorization', 'Bearer tg_sk_unknown');
    expect(unknownKey.status).toBe(401);
    expect(unknownKey.body).toEqual({
      statusCode: 401,
      message: 'Invalid or revoked API key',
      error: 'Unauthorized',
    });
    expectLimitHeaders(unknownKey, 60);
    const before = Number(unknownKey.headers['x-ratelimit-remaining']);

    const none = await server.http.get('/v1/customers');
    expect(none.status).toBe(401);
    expectLimitHeaders(none, 60, before - 1);
  });

  it('counts a session token against its own budget of 100', async () => {
    const token = await sessionTokenFor(server, app.apiKey, app.appId);
    const res = await server.http
      .get(`/v1/apps/${app.appId}/auth/session`)
      .set('authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expectLimitHeaders(res, 100, 99);
  });

  it('allows exactly 100 session requests sent at once, then answers 429 with Retry-After', async () => {
    const token = await sessionTokenFor(server, app.apiKey, app.appId);
    expect(tally(await burst(server.url, 101, token))).toEqual({ 200: 100, 429: 1 });

    const refused = await server.http.post('/graphql').set('authorization', `Bearer ${token}`).send({
      query: '{ __typename }',
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      statusCode: 429,
      message: 'Rate limit exceeded: 100 requests per 60 seconds',
      error: 'Too Many Requests',
    });
    expectLimitHeaders(refused, 100, 0);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('allows exactly 1000 API-key requests sent at once, then answers 429', async () => {
    const fresh = await server.createApp();
    expect(tally(await burst(server.url, 1001, fresh.apiKey))).toEqual({ 200: 1000, 429: 1 });
    const refused = await server.http.get('/v1/customers').set('authorization', `Bearer ${fresh.apiKey}`);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('Too Many Requests');
    expectLimitHeaders(refused, 1000, 0);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    // Another key of the same app is not affected.
    const other = await server.http.get('/v1/customers').set('authorization', `Bearer ${app.apiKey}`);
    expect(other.status).toBe(200);
  });

  it('limits the public login endpoints per client IP (60), whatever credential is sent', async () => {
    const path = `/v1/apps/${app.appId}/auth/verify`;
    const withKey = await server.http
      .post(path)
      .set('authorization', `Bearer ${app.apiKey}`)
      .send({ token: 'x' });
    expect(withKey.status).toBe(401);
    expectLimitHeaders(withKey, 60);
    const remaining = Number(withKey.headers['x-ratelimit-remaining']);
    for (let i = 0; i < remaining; i++) {
      const res = await server.http.post(path).send({ token: 'x' });
      expect(res.status).toBe(401);
    }
    const refused = await server.http
      .post(`/v1/apps/${app.appId}/auth/magic-link`)
      .send({ email: 'a@example.com' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      statusCode: 429,
      message: 'Rate limit exceeded: 60 requests per 60 seconds',
      error: 'Too Many Requests',
    });
    expectLimitHeaders(refused, 60, 0);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The API key's own budget is separate and still open.
    const keyed = await server.http.get('/v1/customers').set('authorization', `Bearer ${app.apiKey}`);
    expect(keyed.status).toBe(200);
  });
});

describe('rate limits with a small configured budget', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_API_KEY: '25' } });
  });
  afterAll(async () => {
    await server.close();
  });

  it('takes the budget from RATE_LIMIT_API_KEY and holds it exactly under concurrency', async () => {
    const { apiKey } = await server.createApp();
    expect(tally(await burst(server.url, 60, apiKey))).toEqual({ 200: 25, 429: 35 });
  });
});

describe('client address behind a proxy', () => {
  const servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  async function statusesFrom(server: TestServer, forwardedFor: string, count: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) {
      const res = await server.http.get('/v1/customers').set('x-forwarded-for', forwardedFor);
      statuses.push(res.status);
    }
    return statuses;
  }

  it('counts per forwarded client address when TRUST_PROXY names the proxy', async () => {
    const server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_IP: '2', TRUST_PROXY: 'loopback' } });
    servers.push(server);
    expect(await statusesFrom(server, '203.0.113.1', 3)).toEqual([401, 401, 429]);
    expect(await statusesFrom(server, '203.0.113.2', 1)).toEqual([401]);
  });

  it('ignores X-Forwarded-For without TRUST_PROXY, so a client cannot pick a fresh budget', async () => {
    const server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_IP: '2' } });
    servers.push(server);
    expect(await statusesFrom(server, '203.0.113.1', 2)).toEqual([401, 401]);
    expect(await statusesFrom(server, '203.0.113.2', 1)).toEqual([429]);
  });
});

describe('rate-limit store failure', () => {
  let server: RunningServer;
  const logLines: string[] = [];
  beforeAll(async () => {
    const config = loadConfig({
      DATABASE_URL: process.env.TEST_DATABASE_URL,
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_TOKEN: `tg_admin_test_${randomSecret()}`,
      // Its own emulator on a free port: the default one belongs to a development server that may be running.
      STRIPE_EMULATOR_PORT: '0',
      STRIPE_RECONCILE_INTERVAL_MINUTES: '0',
      // Nothing listens on port 1: every Redis command fails.
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        logLines.push(String(chunk));
        callback();
      },
    });
    server = await startServer(config, { logger: pino({ level: 'error' }, sink), seedDemo: false });
  });
  afterAll(async () => {
    await server.close();
  });

  it('still serves requests (fail open) with the headers, and logs the failure', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${server.adminToken}` },
        body: TYPENAME,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ data: { __typename: 'Query' } });
      expect(res.headers.get('x-ratelimit-limit')).toBe('1000');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(999 - i));
    }
    const failures = logLines
      .map((line) => JSON.parse(line))
      .filter((l) => l.msg.includes('rate-limit store'));
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures[0]).toMatchObject({ level: 50 });
  });
});
