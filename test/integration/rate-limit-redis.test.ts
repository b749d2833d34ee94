import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describeRequiring, redisRequirement } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The machine's Redis (CI provides one); each run counts under its own key prefix. */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `tollgate-test:${process.pid}:${randomBytes(6).toString('hex')}`;

const QUERY = JSON.stringify({ query: '{ __typename }' });

async function post(server: TestServer, token: string): Promise<Response> {
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: QUERY,
  });
  await res.arrayBuffer();
  return res;
}

describeRequiring(
  await redisRequirement(REDIS_URL),
  'rate limits shared through Redis by several instances',
  () => {
    let first: TestServer;
    let second: TestServer;
    let redis: Redis;
    beforeAll(async () => {
      redis = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null });
      await redis.connect().catch((error: Error) => {
        throw new Error(`this test needs a Redis at ${REDIS_URL} (or set TEST_REDIS_URL): ${error.message}`);
      });
      const env = { REDIS_URL, RATE_LIMIT_KEY_PREFIX: PREFIX };
      [first, second] = await Promise.all([startTestServer({ env }), startTestServer({ env })]);
    });
    afterAll(async () => {
      await Promise.all([first?.close(), second?.close()]);
      if (redis.status !== 'ready') return redis.disconnect();
      const keys = await redis.keys(`${PREFIX}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });

    it('counts 1000 requests spread over two instances as one budget and refuses the 1001st', async () => {
      const { apiKey } = await first.createApp();
      const responses = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => post(i % 2 === 0 ? first : second, apiKey)),
      );
      expect(responses.filter((r) => r.status === 200)).toHaveLength(1000);
      const remaining = responses
        .map((r) => Number(r.headers.get('x-ratelimit-remaining')))
        .sort((a, b) => a - b);
      // Every count from 999 down to 0 was handed out exactly once, whichever instance answered.
      expect(remaining).toEqual(Array.from({ length: 1000 }, (_, i) => i));

      for (const server of [second, first]) {
        const refused = await post(server, apiKey);
        expect(refused.status).toBe(429);
        expect(refused.headers.get('x-ratelimit-limit')).toBe('1000');
        expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    });

    it('shares per-field GraphQL budgets too: 20 requestMagicLink calls over both instances, then refused', async () => {
      const { appId } = await first.createApp({ allowedCallbackUrls: 'https://app.example.com/*' });
      const request = (server: TestServer, i: number) =>
        server.graphql(
          `mutation($appId: ID!, $email: String!) {
          requestMagicLink(appId: $appId, email: $email, redirectUrl: "https://app.example.com/in") }`,
          { appId, email: `shared-${i}@example.com` },
        );
      for (let i = 0; i < 20; i++) {
        expect((await request(i % 2 === 0 ? first : second, i)).body).toEqual({
          data: { requestMagicLink: true },
        });
      }
      for (const server of [first, second]) {
        const refused = await request(server, 99);
        expect(refused.body.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', statusCode: 429 });
      }
    });

    it('keeps the counters in Redis under the configured prefix', async () => {
      const { apiKey } = await second.createApp();
      expect((await post(second, apiKey)).status).toBe(200);
      const keys = await redis.keys(`${PREFIX}:api-key:*`);
      expect(keys.length).toBeGreaterThanOrEqual(2);
      const ttl = await redis.pttl(keys[0]!);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    });
  },
);
