import { randomBytes } from 'node:crypto';
import { Tollgate, TollgateError } from '@tollgate/client';
import { Redis } from 'ioredis';
import { describeRequiring, redisRequirement } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * 429 handling of @tollgate/client against a real Tollgate whose counters live in Redis: the client
 * waits `Retry-After` (through its injectable sleep) and retries GETs and idempotent POSTs. The test's
 * sleep ends the window for real by deleting the key's counter in Redis, instead of waiting a minute.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `tollgate-client-test:${process.pid}:${randomBytes(6).toString('hex')}`;
const BUDGET = 3;

describeRequiring(await redisRequirement(REDIS_URL), '@tollgate/client retries after 429', () => {
  let server: TestServer;
  let redis: Redis;

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null });
    await redis.connect();
    server = await startTestServer({
      env: { REDIS_URL, RATE_LIMIT_KEY_PREFIX: PREFIX, RATE_LIMIT_API_KEY: String(BUDGET) },
    });
  });

  afterAll(async () => {
    await server?.close();
    if (redis?.status === 'ready') {
      const keys = await redis.keys(`${PREFIX}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    }
  });

  /** Ends every API key's window at once, as the passing of a minute would. */
  async function endWindows(): Promise<void> {
    const keys = await redis.keys(`${PREFIX}:api-key:*`);
    expect(keys.length).toBeGreaterThan(0);
    await redis.del(...keys);
  }

  /** A client of a fresh app (its own budget) whose sleeps are recorded and, when asked, end the window. */
  async function clientWith(options: { endWindowOnSleep: boolean; maxRetries?: number }) {
    const { apiKey } = await server.createApp();
    const sleeps: number[] = [];
    const requests: string[] = [];
    const client = new Tollgate({
      apiKey,
      baseUrl: server.url,
      maxRetries: options.maxRetries,
      // The sleeps here end the window at once; a real wait of Retry-After (up to 60 s) each time would
      // need this much time, and the default timeout (80 s) would refuse the second wait.
      timeout: 10 * 60_000,
      fetch: (input, init) => {
        requests.push(`${init?.method} ${new URL(String(input)).pathname}`);
        return fetch(input, init);
      },
      sleep: async (ms) => {
        sleeps.push(ms);
        if (options.endWindowOnSleep) await endWindows();
      },
    });
    return { client, sleeps, requests };
  }

  async function exhaust(client: Tollgate): Promise<void> {
    for (let i = 0; i < BUDGET; i++) await client.customers.list();
  }

  it('retries a GET after Retry-After and answers once the window has passed', async () => {
    const { client, sleeps, requests } = await clientWith({ endWindowOnSleep: true });
    await exhaust(client);
    const page = await client.customers.list();
    expect(page.pagination.total).toBe(0);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]! % 1000).toBe(0);
    expect(sleeps[0]!).toBeGreaterThanOrEqual(1000);
    expect(sleeps[0]!).toBeLessThanOrEqual(60_000);
    expect(requests).toHaveLength(BUDGET + 2);
  });

  it('gives up after maxRetries (default 2) with a TollgateError carrying the 429 and its headers', async () => {
    const { client, sleeps, requests } = await clientWith({ endWindowOnSleep: false });
    await exhaust(client);
    const error = await client.customers.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TollgateError);
    const refused = error as TollgateError;
    expect(refused).toMatchObject({
      statusCode: 429,
      error: 'Too Many Requests',
      message: `Rate limit exceeded: ${BUDGET} requests per 60 seconds`,
    });
    expect(refused.rateLimit).toEqual({ limit: BUDGET, remaining: 0, reset: expect.any(Number) });
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect(sleeps).toEqual([refused.retryAfter! * 1000, refused.retryAfter! * 1000]);
    expect(requests).toHaveLength(BUDGET + 3);
  });

  it('never retries a POST sent without an idempotency key, retries one sent with a key', async () => {
    const plain = await clientWith({ endWindowOnSleep: true });
    await exhaust(plain.client);
    const error = await plain.client.customers
      .create({ email: `a-${randomBytes(4).toString('hex')}@example.com` })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as TollgateError).statusCode).toBe(429);
    expect(plain.sleeps).toEqual([]);

    const keyed = await clientWith({ endWindowOnSleep: true });
    await exhaust(keyed.client);
    const created = await keyed.client.customers.create(
      { email: `b-${randomBytes(4).toString('hex')}@example.com` },
      { idempotencyKey: `create-${randomBytes(4).toString('hex')}` },
    );
    expect(created.id).toMatch(/^cus_/);
    expect(keyed.sleeps).toHaveLength(1);
  });

  it('does not retry with maxRetries: 0', async () => {
    const { client, sleeps } = await clientWith({ endWindowOnSleep: true, maxRetries: 0 });
    await exhaust(client);
    await expect(client.customers.list()).rejects.toMatchObject({ statusCode: 429 });
    expect(sleeps).toEqual([]);
  });
});
