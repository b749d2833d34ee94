import pg from 'pg';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { logLines } from '../helpers/log-lines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Metered checks are answered from each instance's balance cache. Two instances on one database: every
 * consumption, refund, grant and void answered through one shows on the very next check on the other,
 * with no wait in between; so does a grant written by hand in SQL.
 */
let a: TestServer;
let b: TestServer;
const log = logLines();
beforeAll(async () => {
  [a, b] = await Promise.all([
    startTestServer(),
    startTestServer({ env: { LOG_LEVEL: 'info' }, logDestination: log.stream }),
  ]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function setup() {
  const { appId, apiKey } = await a.createApp();
  const fx = new Fixtures(a, appId);
  await fx.plan('free', { calls: { limit: 100, reset: 'month' } } as never, { isDefault: true });
  const customerId = await fx.customer();
  const token = await fx.session(customerId);
  return { appId, apiKey, customerId, token };
}

/** The metered check's balance on `server`. */
async function balanceOn(server: TestServer, token: string) {
  const res = await server.http.get('/v1/entitlements/check/calls').set(bearer(token));
  expect(res.status).toBe(200);
  const { granted, used, remaining } = res.body.balance;
  return { granted, used, remaining, requestId: res.headers['x-request-id'] as string };
}

async function consume(server: TestServer, token: string, amount: number) {
  const res = await server.http.post('/v1/usage').set(bearer(token)).send({ feature: 'calls', amount });
  expect(res.status).toBe(200);
  expect(res.body.allowed).toBe(true);
  return res.body.id as string;
}

/** The `db` of instance B's access-log line of the request that got `requestId`. */
function roundTripsOf(requestId: string) {
  for (const line of log.lines) {
    const entry = JSON.parse(line);
    if (entry.req?.id === requestId && entry.res) return entry.db as { statements: number; barriers: number };
  }
  throw new Error(`no access-log line for ${requestId}`);
}

describe('metered checks across instances', () => {
  it('shows every consumption, refund, grant and void made on one instance on the very next check on the other', async () => {
    const { apiKey, customerId, token } = await setup();
    let used = 0;
    for (let round = 1; round <= 5; round++) {
      // Prime both caches, then change the balance through A and read B at once.
      await Promise.all([balanceOn(a, token), balanceOn(b, token)]);
      const usageId = await consume(a, token, round);
      used += round;
      expect(await balanceOn(b, token)).toMatchObject({ granted: 0, used, remaining: 100 - used });
      expect(await balanceOn(a, token)).toMatchObject({ granted: 0, used, remaining: 100 - used });

      const refund = await a.http.post(`/v1/usage/${usageId}/refund`).set(bearer(apiKey));
      expect(refund.status).toBe(200);
      used -= round;
      expect(await balanceOn(b, token)).toMatchObject({ granted: 0, used, remaining: 100 - used });
      await consume(b, token, round);
      used += round;
      expect(await balanceOn(a, token)).toMatchObject({ granted: 0, used, remaining: 100 - used });
    }

    const grant = await a.http
      .post('/v1/credit-grants')
      .set(bearer(apiKey))
      .send({ customerId, feature: 'calls', amount: 40 });
    expect(grant.status).toBe(201);
    expect(await balanceOn(b, token)).toMatchObject({ granted: 40, used, remaining: 140 - used });
    const voided = await a.http.post(`/v1/credit-grants/${grant.body.id}/void`).set(bearer(apiKey));
    expect(voided.status).toBe(200);
    expect(await balanceOn(b, token)).toMatchObject({ granted: 0, used, remaining: 100 - used });
  });

  it('shows a grant written by hand in SQL on the next check', async () => {
    const { appId, customerId, token } = await setup();
    expect(await balanceOn(b, token)).toMatchObject({ granted: 0, remaining: 100 });
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await client.connect();
    try {
      await client.query(
        `insert into credit_bucket (id, app_id, subject_id, customer_id, feature, kind, amount, priority)
         values ('grant_by_hand_' || md5(random()::text), $1, $2, $2, 'calls', 'grant', 7, 50)`,
        [appId, customerId],
      );
    } finally {
      await client.end();
    }
    expect(await balanceOn(b, token)).toMatchObject({ granted: 7, remaining: 107 });
  });

  it('ends a burst of consumptions on both instances with both checks exact', async () => {
    const { token } = await setup();
    await Promise.all([balanceOn(a, token), balanceOn(b, token)]);
    const burst = Array.from({ length: 40 }, (_, i) => consume(i % 2 === 0 ? a : b, token, 1));
    // Checks running beside the burst may show any state of it; none is kept past its notice.
    const beside = Array.from({ length: 20 }, (_, i) => balanceOn(i % 2 === 0 ? b : a, token));
    await Promise.all([...burst, ...beside]);
    expect(await balanceOn(a, token)).toMatchObject({ used: 40, remaining: 60 });
    expect(await balanceOn(b, token)).toMatchObject({ used: 40, remaining: 60 });
  });

  it('answers a repeated check from memory, and reads again after a consumption', async () => {
    const { token } = await setup();
    await balanceOn(b, token);
    // A check keeps what it read only if no notice naming it, nor a reconnection of the change feed, came
    // while it read: repeat until one is served from memory (or fail).
    await eventually(
      async () => {
        const warm = await balanceOn(b, token);
        const trips = roundTripsOf(warm.requestId);
        return trips.statements === 0 && trips.barriers === 1 ? true : undefined;
      },
      // Spaced and bounded, so the probes stay within the token's rate limit.
      { what: 'a check served from memory after one barrier', intervalMs: 100, timeoutMs: 5000 },
    );
    await consume(a, token, 3);
    const after = await balanceOn(b, token);
    expect(after).toMatchObject({ used: 3, remaining: 97 });
    expect(roundTripsOf(after.requestId)).toEqual({ statements: 1, barriers: 1 });
  });
});
