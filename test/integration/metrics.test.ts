import request from 'supertest';
import { eventually } from '../helpers/eventually.js';
import { samples, value } from '../helpers/metrics.js';
import { productionEnv, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `/metrics` in Prometheus text format: requests counted by method, route template (never the raw URL)
 * and status, the caches, the change feed, provider notifications, rate-limit refusals, the database
 * pool and the process. Open in development; in production only with the bearer METRICS_TOKEN.
 */

describe('/metrics in development', () => {
  let server: TestServer;
  let apiKey: string;
  beforeAll(async () => {
    // A small per-IP budget, so a few anonymous requests reach the limit.
    server = await startTestServer({ env: { RATE_LIMIT_PUBLIC_IP: '5' } });
    ({ apiKey } = await server.createApp());
  });
  afterAll(() => server.close());

  const scrape = async () => {
    const res = await request(server.url).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    return res.text;
  };
  /** How many change-feed barriers the server has waited for (confirmed or not). */
  const barrierCount = async () => {
    const text = await scrape();
    return (
      (value(text, 'tollgate_change_feed_lag_seconds_count', { confirmed: 'true' }) ?? 0) +
      (value(text, 'tollgate_change_feed_lag_seconds_count', { confirmed: 'false' }) ?? 0)
    );
  };

  it('counts requests by method, route template and status, and refusals by rule', async () => {
    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'metrics@example.com' });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    for (let i = 0; i < 2; i++) {
      const res = await server.http.get(`/v1/customers/${id}`).set('authorization', `Bearer ${apiKey}`);
      expect(res.status).toBe(200);
    }
    const missing = await server.http
      .get('/v1/customers/cus_missing')
      .set('authorization', `Bearer ${apiKey}`);
    expect(missing.status).toBe(404);

    // Anonymous requests share the client address's budget of 5: a 401, four 404s, then two 429s.
    expect((await request(server.url).get('/v1/customers')).status).toBe(401);
    for (let i = 0; i < 4; i++)
      expect((await request(server.url).get(`/no/such/path/${i}`)).status).toBe(404);
    for (let i = 0; i < 2; i++)
      expect((await request(server.url).get(`/no/such/path/x${i}`)).status).toBe(429);

    // A forged provider notification: refused, counted, and outside every client budget.
    const forged = await request(server.url)
      .post('/v1/webhooks/stripe')
      .set('content-type', 'application/json')
      .set('stripe-signature', `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`)
      .send('{"id":"evt_forged","type":"checkout.session.completed"}');
    expect(forged.status).toBe(400);

    const text = await scrape();
    const requests = (route: string, status: number, method = 'GET') =>
      value(text, 'http_requests_total', { method, route, status: String(status) });
    expect(requests('/v1/customers', 201, 'POST')).toBe(1);
    expect(requests('/v1/customers/:id', 200)).toBe(2);
    expect(requests('/v1/customers/:id', 404)).toBe(1);
    // Without a credential the route answers 401 itself: routed, so labelled with its template.
    expect(requests('/v1/customers', 401)).toBe(1);
    expect(requests('(unrouted)', 404)).toBe(4);
    expect(requests('(unrouted)', 429)).toBe(2);
    expect(requests('/v1/webhooks/stripe', 400, 'POST')).toBe(1);
    expect(requests('/graphql', 200, 'POST')).toBe(1); // createApp
    // No raw URL ever becomes a label.
    const routes = samples(text, 'http_requests_total').map((s) => s.labels.route);
    expect(routes.filter((route) => /cus_|\/no\/such/.test(route!))).toEqual([]);

    const duration = (suffix: string) =>
      value(text, `http_request_duration_seconds_${suffix}`, {
        method: 'GET',
        route: '/v1/customers/:id',
        status: '200',
      });
    expect(duration('count')).toBe(2);
    expect(duration('sum')).toBeGreaterThan(0);
    expect(
      value(text, 'http_request_duration_seconds_bucket', {
        method: 'GET',
        route: '/v1/customers/:id',
        status: '200',
        le: '+Inf',
      }),
    ).toBe(2);

    expect(value(text, 'tollgate_rate_limit_rejections_total', { rule: 'ip' })).toBe(2);
    expect(value(text, 'tollgate_webhook_events_total', { provider: 'stripe', outcome: 'refused' })).toBe(1);
  });

  it('counts entitlement cache lookups and the change feed confirming freshness', async () => {
    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'cache@example.com' });
    const check = async () => {
      const res = await server.http
        .get(`/v1/entitlements/check/sso?customerId=${created.body.id}`)
        .set('authorization', `Bearer ${apiKey}`);
      expect(res.status).toBe(200);
    };
    const lookups = (text: string, result: string) =>
      value(text, 'tollgate_cache_lookups_total', { cache: 'entitlements', result }) ?? 0;

    // The first check loads; a later one is served from the cache. (A change committed elsewhere in the
    // run may keep one load from being cached, so the hit is awaited rather than expected at once.)
    await check();
    expect(lookups(await scrape(), 'miss')).toBeGreaterThanOrEqual(1);
    let checks = 1;
    const text = await eventually(async () => {
      await check();
      checks += 1;
      const current = await scrape();
      return lookups(current, 'hit') >= 1 ? current : undefined;
    });
    expect(lookups(text, 'hit') + lookups(text, 'miss') + lookups(text, 'bypass')).toBe(checks);
    expect(
      value(text, 'tollgate_change_feed_lag_seconds_count', { confirmed: 'true' }),
    ).toBeGreaterThanOrEqual(checks);
  });

  it('takes one change-feed barrier for all the cached lookups of a REST read', async () => {
    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'one-barrier@example.com' });
    expect(created.status).toBe(201);
    const before = await barrierCount();
    // Each check looks up the API key, the customer and the entitlements in caches.
    for (let i = 0; i < 3; i++) {
      const res = await server.http
        .get(`/v1/entitlements/check/sso?customerId=${created.body.id}`)
        .set('authorization', `Bearer ${apiKey}`);
      expect(res.status).toBe(200);
    }
    expect((await barrierCount()) - before).toBe(3);
  });

  it('takes one change-feed barrier for a consumption, whose only write is to the usage ledger', async () => {
    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'one-barrier-usage@example.com' });
    expect(created.status).toBe(201);
    const before = await barrierCount();
    const res = await server.http
      .post('/v1/usage')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId: created.body.id, feature: 'calls' });
    // The test app's plans meter nothing: the answer is a refusal, after the same lookups.
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ allowed: false, balance: null });
    expect((await barrierCount()) - before).toBe(1);
  });

  it('reports the database pool and the process', async () => {
    const text = await scrape();
    expect(value(text, 'tollgate_db_pool_connections', { state: 'in_use' })).toEqual(expect.any(Number));
    expect(value(text, 'tollgate_db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'tollgate_db_pool_waiting')).toBe(0);
    expect(value(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(value(text, 'nodejs_eventloop_lag_seconds')).toEqual(expect.any(Number));
  });
});

describe('/metrics in production', () => {
  const token = 'metrics-token-0123456789abcdef';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: productionEnv({ TRUST_PROXY: 'loopback', METRICS_TOKEN: token }) });
  });
  afterAll(() => server.close());

  const unauthorized = {
    statusCode: 401,
    message: 'Metrics require the bearer token set in METRICS_TOKEN',
    error: 'Unauthorized',
  };

  it('answers 401 without the token or with another', async () => {
    const none = await server.http.get('/metrics');
    expect(none.status).toBe(401);
    expect(none.body).toEqual(unauthorized);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    const wrong = await server.http.get('/metrics').set('authorization', `Bearer ${token}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual(unauthorized);
    // Two Authorization headers are not guessed at, even when one holds the token.
    const twice = await server.http
      .get('/metrics')
      .set('authorization', [`Bearer ${token}`, `Bearer ${token}x`] as unknown as string);
    expect(twice.status).toBe(401);
    expect(twice.body).toEqual(unauthorized);
  });

  it('answers with the token, over plain HTTP too (Prometheus scrapes each instance directly)', async () => {
    const res = await request(server.url).get('/metrics').set('authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('# TYPE http_requests_total counter');
    expect(value(res.text, 'http_requests_total', { method: 'GET', route: '/metrics', status: '401' })).toBe(
      3,
    );
  });

  it('stays closed to everyone when METRICS_TOKEN is unset', async () => {
    const closed = await startTestServer({ env: productionEnv({ TRUST_PROXY: 'loopback' }) });
    try {
      const res = await closed.http.get('/metrics').set('authorization', 'Bearer ');
      expect(res.status).toBe(401);
      expect(res.body).toEqual(unauthorized);
    } finally {
      await closed.close();
    }
  });
});
