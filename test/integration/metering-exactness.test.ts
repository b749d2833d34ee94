import { Agent, request } from 'node:http';
import { withContext } from '../../src/db.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Two Tollgate instances on one database consuming one balance at once: every consumption is one
 * PostgreSQL transaction, so exactly what the balance holds is allowed, on whichever instance.
 */
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  // One app's key sends thousands of requests here: far above the per-key budget of the other tests.
  const options = { env: { RATE_LIMIT_API_KEY: '1000000' } };
  [a, b] = await Promise.all([startTestServer(options), startTestServer(options)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

/**
 * The burst is issued all at once; a client keeps at most 100 connections to each instance (as an HTTP
 * client pool does), so the requests queue on the client and on the server, never in the kernel's backlog.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 100 });
afterAll(() => agent.destroy());

function consume(server: TestServer, apiKey: string, customerId: string, amount: number) {
  const body = JSON.stringify({ customerId, feature: 'calls', amount });
  return new Promise<{ status: number; body: { allowed: boolean; balance: { remaining: number } } }>(
    (resolve, reject) => {
      const req = request(
        `${server.url}/v1/usage`,
        {
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

async function usageRows(server: TestServer, customerId: string) {
  return withContext(server.deps.orm, async () => {
    const [row] = await server.deps.orm.em
      .getConnection()
      .execute<{ n: string; total: string | null }[]>(
        'select count(*) as n, sum(amount) as total from usage_record where subject_id = ?',
        [customerId],
      );
    return { n: Number(row!.n), total: Number(row!.total ?? 0) };
  });
}

describe('exact balances under concurrency', () => {
  it('allows exactly 1 000 of 2 000 concurrent consumptions of 1 over two instances', async () => {
    const { appId, apiKey } = await a.createApp();
    const fx = new Fixtures(a, appId);
    await fx.plan('free', { calls: { limit: 1000, reset: 'month' } } as never, { isDefault: true });
    const customerId = await fx.customer();
    const answers = await Promise.all(
      Array.from({ length: 2000 }, (_, i) => consume(i % 2 === 0 ? a : b, apiKey, customerId, 1)),
    );
    expect(answers.filter((r) => r.status !== 200)).toEqual([]);
    expect(answers.filter((r) => r.body.allowed).length).toBe(1000);
    expect(await usageRows(a, customerId)).toEqual({ n: 1000, total: 1000 });
    const balance = await fetch(`${b.url}/v1/balances?customerId=${customerId}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(((await balance.json()) as any).data).toEqual([
      expect.objectContaining({ limit: 1000, used: 1000, remaining: 0 }),
    ]);
  }, 120_000);

  it('never goes below 0 with mixed amounts, and records exactly what it allowed', async () => {
    const { appId, apiKey } = await a.createApp();
    const fx = new Fixtures(a, appId);
    await fx.plan('free', { calls: { limit: 500, reset: 'month' } } as never, { isDefault: true });
    const customerId = await fx.customer();
    // A grant as a second bucket, so consumptions also split across buckets.
    const grant = await fetch(`${a.url}/v1/credit-grants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ customerId, feature: 'calls', amount: 257, priority: 0 }),
    });
    expect(grant.status).toBe(201);
    const amounts = Array.from({ length: 600 }, (_, i) => ((i * 7) % 5) + 1);
    const answers = await Promise.all(
      amounts.map((amount, i) => consume(i % 2 === 0 ? a : b, apiKey, customerId, amount)),
    );
    expect(answers.filter((r) => r.status !== 200)).toEqual([]);
    const allowed = answers.reduce((sum, r, i) => sum + (r.body.allowed ? amounts[i]! : 0), 0);
    expect(answers.every((r) => r.body.balance.remaining >= 0)).toBe(true);
    expect(await usageRows(a, customerId)).toEqual({
      n: answers.filter((r) => r.body.allowed).length,
      total: allowed,
    });
    const balance = await fetch(`${b.url}/v1/balances?customerId=${customerId}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const [state] = ((await balance.json()) as any).data;
    expect(state).toMatchObject({ limit: 500, granted: 257, used: allowed, remaining: 757 - allowed });
    // The amounts sum to far more than 757, so the balance ends below the largest amount (5).
    expect(state.remaining).toBeLessThan(5);
  }, 120_000);
});
