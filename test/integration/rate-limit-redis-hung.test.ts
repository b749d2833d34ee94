import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { eventually } from '../helpers/eventually.js';
import { describeRequiring, redisServerRequirement } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A Redis that stops answering (SIGSTOP: the connection stays open, nothing comes back) costs one slow
 * request, not one per request: after the first command times out, the rate-limit store counts in
 * process until a background probe sees Redis answer again. A private `redis-server`, so stopping it
 * disturbs no other test.
 */

const PREFIX = `tollgate-test-hung:${process.pid}:${randomBytes(6).toString('hex')}`;
const BUDGET = 40;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function timedPost(server: TestServer, token: string) {
  const started = performance.now();
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  await res.arrayBuffer();
  return {
    status: res.status,
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    ms: performance.now() - started,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describeRequiring(redisServerRequirement(), 'rate limits with a Redis that stops answering', () => {
  let redisProcess: ChildProcess;
  let redis: Redis;
  let server: TestServer;
  let apiKey: string;
  beforeAll(async () => {
    const port = await freePort();
    redisProcess = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const url = `redis://127.0.0.1:${port}`;
    redis = await eventually(
      async () => {
        const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
        return client.connect().then(
          () => client,
          () => {
            client.disconnect();
            return undefined;
          },
        );
      },
      { what: 'the private redis-server to accept connections' },
    );
    server = await startTestServer({
      env: { REDIS_URL: url, RATE_LIMIT_KEY_PREFIX: PREFIX, RATE_LIMIT_API_KEY: String(BUDGET) },
    });
    ({ apiKey } = await server.createApp());
  });
  afterAll(async () => {
    redisProcess?.kill('SIGCONT');
    redis?.disconnect();
    await server?.close();
    redisProcess?.kill('SIGTERM');
  });

  /** The key's count in Redis: what the requests counted there so far. */
  const countInRedis = async (): Promise<number> => {
    const keys = await redis.keys(`${PREFIX}:api-key:key:*`);
    const values = await Promise.all(keys.map((key) => redis.get(key)));
    return values.reduce((sum, value) => sum + Number(value ?? 0), 0);
  };

  it('after the first timeout answers at normal speed, still limits in process, and uses Redis again after SIGCONT', async () => {
    // createApp's key is counted from its first use: 10 requests at normal speed, counted in Redis.
    const normal: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await timedPost(server, apiKey);
      expect(res).toMatchObject({ status: 200, remaining: BUDGET - 1 - i });
      normal.push(res.ms);
    }
    expect(await countInRedis()).toBe(10);

    redisProcess.kill('SIGSTOP');
    // The first request waits for the command timeout (1 s), then is answered from the fallback.
    const first = await timedPost(server, apiKey);
    expect(first.status).toBe(200);
    expect(first.ms).toBeGreaterThanOrEqual(900);

    // Every later request is answered without waiting for Redis, counted in this process (from zero).
    const after: number[] = [];
    for (let i = 1; i < BUDGET; i++) {
      const res = await timedPost(server, apiKey);
      expect(res).toMatchObject({ status: 200, remaining: BUDGET - 1 - i });
      after.push(res.ms);
    }
    expect(median(after)).toBeLessThanOrEqual(median(normal) + 50);
    // Not one of them paid the command timeout.
    expect(Math.max(...after)).toBeLessThan(500);
    // The limit still holds while Redis is away: the budget's next request is refused.
    expect(await timedPost(server, apiKey)).toMatchObject({ status: 429, remaining: 0 });

    redisProcess.kill('SIGCONT');
    // Once a probe sees Redis answer, requests are counted there again: the in-process budget is spent,
    // so a 200 can only come from Redis's count, which went on from its 10 (11 with the command that
    // timed out, which Redis runs when it wakes).
    const back = await eventually(
      async () => {
        const res = await timedPost(server, apiKey);
        return res.status === 200 ? res : undefined;
      },
      { what: 'requests to be counted in Redis again' },
    );
    const counted = await countInRedis();
    expect(counted).toBeGreaterThanOrEqual(12);
    expect(back.remaining).toBe(BUDGET - counted);
  });
});
