import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ATTEMPT_TIMEOUT_MS } from '../../src/modules/webhooks/webhook-dispatcher.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The 10 s bound on an outbound delivery attempt, with the shipped value: a receiver on loopback that
 * accepts the connection and reads the request but never answers. The attempt is recorded as a failed
 * timeout with its duration, and the retry is scheduled and sent with the same `webhook-id`.
 */

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

interface Hung {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

let silent: Server;
let silentUrl: string;
const hung: Hung[] = [];
let server: TestServer;

beforeAll(async () => {
  silent = createServer((req, _res) => {
    // Reads the whole request, then never answers (nor closes the connection).
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () =>
      hung.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }),
    );
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  // One retry, 1 s after the first attempt, so the test need not wait for the real 5 s step.
  server = await startTestServer({ env: { WEBHOOK_RETRY_SCHEDULE: '1' } });
});

afterAll(async () => {
  // The hung connections go first, so an attempt still waiting ends at once rather than at its bound.
  silent?.closeAllConnections();
  await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
  await server?.close();
});

it('ships a 10 000 ms bound per attempt', () => {
  expect(ATTEMPT_TIMEOUT_MS).toBe(10_000);
});

it('records an unanswered attempt as a failed timeout with its duration, and retries it with the same webhook-id', async () => {
  const { apiKey } = await server.createApp();
  const created = await server.http
    .post('/v1/webhook-endpoints')
    .set(auth(apiKey))
    .send({ url: `${silentUrl}/hang`, events: ['customer.created'] });
  expect(created.status).toBe(201);
  const endpointId = created.body.endpoint.id as string;
  const email = `hang-${randomBytes(4).toString('hex')}@example.com`;
  const customer = await server.http.post('/v1/customers').set(auth(apiKey)).send({ email });
  expect(customer.status).toBe(201);
  const mine = () =>
    hung.filter((r) => r.path === '/hang' && JSON.parse(r.body).data.id === customer.body.id);

  // The first attempt reaches the receiver and waits there.
  const [first] = await eventually(() => (mine().length >= 1 ? mine() : undefined), {
    what: 'the first attempt to reach the receiver',
  });
  const webhookId = first!.headers['webhook-id'];
  expect(webhookId).toEqual(expect.stringMatching(/^\S+$/));

  // Settled by the bound, not by an answer: failed, no status code, the reason and how long it waited.
  const delivery = await eventually(
    async () => {
      const res = await server.http
        .get(`/v1/webhook-endpoints/${endpointId}/deliveries`)
        .query({ limit: 100 })
        .set(auth(apiKey));
      expect(res.status).toBe(200);
      const found = (res.body.data as any[]).find((d) => d.eventId === webhookId);
      return found?.attempts === 1 ? found : undefined;
    },
    { what: 'the first attempt to time out', timeoutMs: 25_000 },
  );
  expect(delivery).toMatchObject({
    endpointId,
    eventId: webhookId,
    eventType: 'customer.created',
    status: 'pending',
    attempts: 1,
    nextAttemptAt: expect.any(String),
  });
  expect(delivery.attemptLog).toEqual([
    {
      attemptedAt: expect.any(String),
      statusCode: null,
      durationMs: expect.any(Number),
      excerpt: 'timeout: no answer within 10 s',
    },
  ]);
  // The recorded duration is the shipped bound: at least 10 000 ms, and well short of the agent's 30 s
  // idle-socket timeout, which would otherwise be what ended it.
  const [attempt] = delivery.attemptLog;
  expect(attempt.durationMs).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS);
  expect(attempt.durationMs).toBeLessThan(30_000);
  // The retry is scheduled one step of the schedule (1 s) after the attempt was recorded.
  expect(new Date(delivery.nextAttemptAt).getTime() - new Date(attempt.attemptedAt).getTime()).toBe(1_000);

  // And sent: the same event, under the same webhook-id.
  const [, second] = await eventually(() => (mine().length >= 2 ? mine() : undefined), {
    what: 'the retry to reach the receiver',
    timeoutMs: 15_000,
  });
  expect(second!.headers['webhook-id']).toBe(webhookId);
  expect(JSON.parse(second!.body)).toEqual(JSON.parse(first!.body));
}, 60_000);
