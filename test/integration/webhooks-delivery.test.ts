import { randomBytes } from 'node:crypto';
import { createScratchDatabase, dropDatabase } from '../../src/infra/database-admin.js';
import { eventually } from '../helpers/eventually.js';
import { productionEnv, startTestServer, type TestServer } from '../helpers/server.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * How deliveries behave: retries on the Standard Webhooks schedule with the same webhook-id, a failed
 * delivery kept and replayable, redirects not followed, private and (in production) loopback
 * destinations refused on the address resolved at delivery time, and several instances sharing the work
 * without sending anything twice. Only loopback ever receives traffic: the refused names resolve through
 * an injected resolver, and nothing connects to what it answers.
 */

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await receiver.close();
});

async function endpointFor(server: TestServer, apiKey: string, url: string) {
  const res = await server.http.post('/v1/webhook-endpoints').set(auth(apiKey)).send({ url });
  expect(res.status).toBe(201);
  return { id: res.body.endpoint.id as string, secret: res.body.secret as string };
}

async function deliveriesOf(server: TestServer, apiKey: string, endpointId: string) {
  const res = await server.http
    .get(`/v1/webhook-endpoints/${endpointId}/deliveries`)
    .query({ limit: 100 })
    .set(auth(apiKey));
  expect(res.status).toBe(200);
  return res.body.data as any[];
}

/**
 * Waits until `n` webhooks have arrived at `path` and the endpoint lists `n` deliveries, every one
 * succeeded; gives both (what arrived read after the deliveries settled).
 */
async function deliveredAll(server: TestServer, apiKey: string, endpointId: string, path: string, n: number) {
  const arrived = () => receiver.received.filter((r) => r.path === path);
  await eventually(() => (arrived().length >= n ? true : undefined), {
    what: `${n} deliveries`,
    timeoutMs: 30_000,
  });
  const deliveries = await eventually(async () => {
    const list = await deliveriesOf(server, apiKey, endpointId);
    return list.length === n && list.every((d) => d.status === 'succeeded') ? list : undefined;
  });
  return { arrived: arrived(), deliveries };
}

async function newCustomer(
  server: TestServer,
  apiKey: string,
  email = `c-${randomBytes(4).toString('hex')}@example.com`,
) {
  const res = await server.http.post('/v1/customers').set(auth(apiKey)).send({ email });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

describe('retries', () => {
  let server: TestServer;
  beforeAll(async () => {
    // The real first step (5 s), then a short last one so the test need not wait minutes for the end.
    server = await startTestServer({ env: { WEBHOOK_RETRY_SCHEDULE: '5,1' } });
  });
  afterAll(async () => {
    await server.close();
  });

  it('sends the same webhook-id again about 5 s after a 500, marks the delivery failed after the last attempt, and replays it on request', async () => {
    const { apiKey } = await server.createApp();
    const { id: endpointId, secret } = await endpointFor(server, apiKey, `${receiver.url}/flaky`);
    let healthy = false;
    receiver.status = (r) => (r.path === '/flaky' && !healthy ? 500 : r.path === '/moved' ? 302 : 200);
    const customer = await newCustomer(server, apiKey);
    const mine = () =>
      receiver.received.filter((r) => r.path === '/flaky' && r.payload.data.id === customer.id);

    const [first, second, third] = await eventually(() => (mine().length >= 3 ? mine() : undefined), {
      what: 'three attempts',
      timeoutMs: 30_000,
    });
    expect(new Set([first, second, third].map((r) => r!.headers['webhook-id'])).size).toBe(1);
    // Each attempt is signed afresh (its own timestamp) and verifies.
    for (const attempt of [first, second, third]) expect(verify(secret, attempt!)).toEqual(first!.payload);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(4_900);

    const [failed] = await eventually(async () => {
      const list = await deliveriesOf(server, apiKey, endpointId);
      return list[0]?.status === 'failed' ? list : undefined;
    });
    expect(failed).toMatchObject({
      endpointId,
      eventId: first!.headers['webhook-id'],
      eventType: 'customer.created',
      status: 'failed',
      attempts: 3,
      nextAttemptAt: null,
    });
    expect(failed.attemptLog).toHaveLength(3);
    for (const attempt of failed.attemptLog) {
      expect(attempt).toEqual({
        attemptedAt: expect.any(String),
        statusCode: 500,
        durationMs: expect.any(Number),
        excerpt: 'receiver says no',
      });
    }

    healthy = true;
    const replay = await server.http.post(`/v1/webhook-deliveries/${failed.id}/retry`).set(auth(apiKey));
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: failed.id, status: 'pending', attempts: 3 });
    const [delivered] = await eventually(async () => {
      const list = await deliveriesOf(server, apiKey, endpointId);
      return list[0]?.status === 'succeeded' ? list : undefined;
    });
    expect(delivered).toMatchObject({ status: 'succeeded', attempts: 4 });
    expect(delivered.attemptLog[0]).toMatchObject({ statusCode: 200, excerpt: 'ok' });
    expect(mine()).toHaveLength(4);
    expect(mine()[3]!.headers['webhook-id']).toBe(first!.headers['webhook-id']);

    // A settled delivery of another app is not this app's to replay.
    const other = await server.createApp();
    const foreign = await server.http
      .post(`/v1/webhook-deliveries/${failed.id}/retry`)
      .set(auth(other.apiKey));
    expect(foreign.status).toBe(404);
  });

  it('does not follow a redirect: a 302 is a failed attempt, and the redirect target hears nothing', async () => {
    const { apiKey } = await server.createApp();
    const { id: endpointId } = await endpointFor(server, apiKey, `${receiver.url}/moved`);
    receiver.status = (r) => (r.path === '/moved' ? 302 : 200);
    await newCustomer(server, apiKey);
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(server, apiKey, endpointId);
      return list[0]?.attempts >= 1 ? list : undefined;
    });
    expect(delivery.attemptLog.at(-1)).toMatchObject({ statusCode: 302 });
    expect(receiver.received.filter((r) => r.path === '/moved').length).toBeGreaterThanOrEqual(1);
    expect(receiver.received.filter((r) => r.path !== '/moved' && r.path !== '/flaky')).toEqual([]);
  });
});

describe('refused destinations', () => {
  it('refuses a name that resolves to a private or metadata address at delivery time (development)', async () => {
    const asked: string[] = [];
    const server = await startTestServer({
      env: { WEBHOOK_RETRY_SCHEDULE: '1' },
      webhookResolver: async (hostname) => {
        asked.push(hostname);
        return [{ address: hostname.startsWith('metadata') ? '169.254.169.254' : '10.0.0.7', family: 4 }];
      },
    });
    try {
      const { apiKey } = await server.createApp();
      const internal = await endpointFor(server, apiKey, 'http://hooks.internal.test/events');
      const metadata = await endpointFor(server, apiKey, 'http://metadata.internal.test/latest');
      const literal = await endpointFor(server, apiKey, 'http://169.254.169.254/latest/meta-data');
      await newCustomer(server, apiKey);

      for (const [endpoint, excerpt] of [
        [
          internal,
          'refused: hooks.internal.test resolves to a private, link-local or reserved address (10.0.0.7)',
        ],
        [
          metadata,
          'refused: metadata.internal.test resolves to a private, link-local or reserved address (169.254.169.254)',
        ],
        [literal, 'refused: a private, link-local or reserved address (169.254.169.254)'],
      ] as const) {
        const [delivery] = await eventually(async () => {
          const list = await deliveriesOf(server, apiKey, endpoint.id);
          return list[0]?.status === 'failed' ? list : undefined;
        });
        expect(delivery.attempts).toBe(2);
        for (const attempt of delivery.attemptLog)
          expect(attempt).toMatchObject({ statusCode: null, excerpt });
      }
      // Resolved at each attempt, not once when the endpoint was saved.
      expect(asked.filter((name) => name === 'hooks.internal.test')).toHaveLength(2);
      expect(asked).not.toContain('169.254.169.254');
    } finally {
      await server.close();
    }
  });

  it('in production, requires https and refuses a name that now resolves to loopback (DNS rebinding)', async () => {
    const server = await startTestServer({
      env: productionEnv({ TRUST_PROXY: 'loopback', WEBHOOK_RETRY_SCHEDULE: '1' }),
      webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    try {
      const { apiKey } = await server.createApp();
      const plain = await server.http
        .post('/v1/webhook-endpoints')
        .set(auth(apiKey))
        .send({ url: 'http://hooks.example.com/events' });
      expect(plain.status).toBe(400);
      expect(plain.body.message).toBe('url: must be an https URL');
      const localhost = await server.http
        .post('/v1/webhook-endpoints')
        .set(auth(apiKey))
        .send({ url: `${receiver.url}/prod` });
      expect(localhost.status).toBe(400);

      const rebinding = await endpointFor(server, apiKey, 'https://rebind.example.com/events');
      const literal = await endpointFor(server, apiKey, 'https://127.0.0.1:1/events');
      await newCustomer(server, apiKey);
      for (const [endpoint, excerpt] of [
        [rebinding, 'refused: rebind.example.com resolves to a loopback address (127.0.0.1)'],
        [literal, 'refused: a loopback address (127.0.0.1)'],
      ] as const) {
        const [delivery] = await eventually(async () => {
          const list = await deliveriesOf(server, apiKey, endpoint.id);
          return list[0]?.status === 'failed' ? list : undefined;
        });
        expect(delivery.attemptLog[0]).toMatchObject({ statusCode: null, excerpt });
      }
    } finally {
      await server.close();
    }
  });
});

describe('a large batch', () => {
  it('sends every delivery of a batch once, each signed with the endpoint’s secrets', async () => {
    const server = await startTestServer();
    try {
      const { apiKey } = await server.createApp();
      const endpoint = await endpointFor(server, apiKey, `${receiver.url}/batch`);
      const rotated = await server.http
        .post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`)
        .set(auth(apiKey));
      expect(rotated.status).toBe(200);
      // Created together: their deliveries are claimed and sent in few batches, side by side.
      const customers = await Promise.all(Array.from({ length: 40 }, () => newCustomer(server, apiKey)));
      const { arrived, deliveries } = await deliveredAll(server, apiKey, endpoint.id, '/batch', 40);
      expect(deliveries.map((d) => d.attempts)).toEqual(deliveries.map(() => 1));
      expect(arrived).toHaveLength(40);
      expect(new Set(arrived.map((r) => r.headers['webhook-id'])).size).toBe(40);
      expect(new Set(arrived.map((r) => r.payload.data.id))).toEqual(new Set(customers.map((c) => c.id)));
      for (const webhook of arrived) {
        expect(verify(rotated.body.secret, webhook)).toEqual(webhook.payload);
        expect(verify(endpoint.secret, webhook)).toEqual(webhook.payload);
      }
    } finally {
      await server.close();
    }
  });
});

describe('several instances', () => {
  it('share one queue and deliver each event exactly once', async () => {
    const env = { JOB_QUEUE_SCHEMA: `jobs_${randomBytes(6).toString('hex')}` };
    const [a, b] = await Promise.all([startTestServer({ env }), startTestServer({ env })]);
    try {
      const { apiKey } = await a.createApp();
      const endpoint = await endpointFor(a, apiKey, `${receiver.url}/shared`);
      const customers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => newCustomer(i % 2 === 0 ? a : b, apiKey)),
      );
      const ids = new Set(customers.map((c) => c.id));
      const { arrived, deliveries } = await deliveredAll(a, apiKey, endpoint.id, '/shared', 40);
      expect(deliveries.every((d) => d.attempts === 1)).toBe(true);
      expect(arrived).toHaveLength(40);
      expect(new Set(arrived.map((r) => r.headers['webhook-id'])).size).toBe(40);
      expect(new Set(arrived.map((r) => r.payload.data.id))).toEqual(ids);
      // Each attempt is counted by the instance that made it: 40 in all, whichever made them.
      const attempts = async (server: TestServer) =>
        (await server.deps.metrics!.outboundAttempts.get()).values.reduce((sum, v) => sum + v.value, 0);
      expect((await attempts(a)) + (await attempts(b))).toBe(40);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('hands back a delivery whose job was lost, and sends it once when two instances sweep and deliver it at once', async () => {
    // A database of their own: the sweep hands back every lost delivery of the database, and other files'
    // servers leave theirs in the shared one (a delivery still pending when its server closed).
    const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
    const database = `tollgate_sweep_${process.pid}_${randomBytes(4).toString('hex')}`;
    const env = {
      JOB_QUEUE_SCHEMA: `jobs_${randomBytes(6).toString('hex')}`,
      DATABASE_URL: await createScratchDatabase(serverUrl, database),
    };
    const a = await startTestServer({ env });
    const b = await startTestServer({ env });
    try {
      const { appId, apiKey } = await a.createApp();
      const endpoint = await endpointFor(a, apiKey, `${receiver.url}/lost`);
      // A committed event whose announcement never reached the job queue (the process died in
      // between): due two minutes ago, with no job.
      const eventId = `msg_lost${randomBytes(8).toString('hex')}`;
      const deliveryId = `whd_${eventId.slice(4)}_1`;
      const sql = a.deps.orm.em.fork().getConnection();
      await sql.execute(
        `insert into webhook_event (id, app_id, type, body, created_at)
           values (?, ?, 'customer.updated', ?, now() - interval '2 minutes')`,
        [
          eventId,
          appId,
          JSON.stringify({ type: 'customer.updated', timestamp: 'then', data: { id: 'lost' } }),
        ],
      );
      await sql.execute(
        `insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at)
           values (?, ?, ?, 'pending', 0, now() - interval '2 minutes')`,
        [deliveryId, eventId, endpoint.id],
      );
      const arrived = () => receiver.received.filter((r) => r.headers['webhook-id'] === eventId);

      // The sweep finds it and hands it to the queue; meanwhile both instances are also told to make the
      // same attempt, one of them twice: the claim lets exactly one of all these send it.
      expect(await a.services.webhookDispatcher.sweep()).toBe(1);
      const job = { deliveryIds: [deliveryId], attempt: 0 };
      await Promise.all([
        a.services.webhookDispatcher.deliver([job]),
        b.services.webhookDispatcher.deliver([job, job]),
      ]);
      const [delivered] = await eventually(async () => {
        const list = await deliveriesOf(a, apiKey, endpoint.id);
        return list[0]?.status === 'succeeded' ? list : undefined;
      });
      expect(delivered).toMatchObject({ id: deliveryId, eventId, status: 'succeeded', attempts: 1 });
      expect(delivered.attemptLog).toHaveLength(1);
      // The job the sweep made runs too, and finds it settled.
      await eventually(
        async () =>
          (
            await a.deps.orm.em
              .fork()
              .getConnection()
              .execute<{ n: string }[]>(
                `select count(*) as n from ${env.JOB_QUEUE_SCHEMA}.job
                where name = 'webhook-delivery' and state not in ('completed', 'failed', 'cancelled')`,
              )
          )[0]!.n === '0' || undefined,
        { what: 'the swept jobs to finish' },
      );
      expect(arrived()).toHaveLength(1);
      expect(verify(endpoint.secret, arrived()[0]!)).toEqual({
        type: 'customer.updated',
        timestamp: 'then',
        data: { id: 'lost' },
      });
      // Nothing is left to sweep.
      expect(await a.services.webhookDispatcher.sweep()).toBe(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await dropDatabase(serverUrl, database);
    }
  });
});

describe('retention', () => {
  it('deletes settled events older than the retention with their deliveries and attempts, and keeps pending and recent ones', async () => {
    const server = await startTestServer({ env: { WEBHOOK_RETENTION_DAYS: '30' } });
    try {
      const { appId, apiKey } = await server.createApp();
      const endpoint = await endpointFor(server, apiKey, `${receiver.url}/retention`);
      const sql = server.deps.orm.em.fork().getConnection();
      const marker = randomBytes(6).toString('hex');
      /** An event `ageDays` old with one delivery in `status` and one attempt. */
      const event = async (name: string, ageDays: number, status: 'succeeded' | 'failed' | 'pending') => {
        const id = `msg_${marker}${name}`;
        const at = `now() - interval '${ageDays} days'`;
        await sql.execute(
          `insert into webhook_event (id, app_id, type, body, created_at) values (?, ?, 'customer.updated', '{}', ${at})`,
          [id, appId],
        );
        await sql.execute(
          `insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
             values (?, ?, ?, ?, 1, ${status === 'pending' ? `${at} + interval '1 year'` : 'null'}, ${at}, ${at})`,
          [`whd_${marker}${name}`, id, endpoint.id, status],
        );
        await sql.execute(
          `insert into webhook_attempt (id, delivery_id, attempted_at, status_code, duration_ms, excerpt)
             values (?, ?, ${at}, 500, 3, 'no')`,
          [`wha_${marker}${name}`, `whd_${marker}${name}`],
        );
        return id;
      };
      const oldSucceeded = await event('a', 31, 'succeeded');
      const oldFailed = await event('b', 45, 'failed');
      const oldPending = await event('c', 40, 'pending');
      const recent = await event('d', 29, 'succeeded');

      expect(await server.services.webhookDispatcher.purge()).toBe(2);
      const left = await sql.execute<{ id: string }[]>(
        'select id from webhook_event where id like ? order by id',
        [`msg\\_${marker}%`],
      );
      expect(left.map((r) => r.id)).toEqual([oldPending, recent]);
      const orphans = await sql.execute<{ n: string }[]>(
        `select (select count(*) from webhook_delivery where event_id in (?, ?))
              + (select count(*) from webhook_attempt where delivery_id in (?, ?)) as n`,
        [oldSucceeded, oldFailed, `whd_${marker}a`, `whd_${marker}b`],
      );
      expect(orphans[0]!.n).toBe('0');
      expect(await server.services.webhookDispatcher.purge()).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('keeps every event with a retention of 0', async () => {
    const server = await startTestServer({ env: { WEBHOOK_RETENTION_DAYS: '0' } });
    try {
      const { appId } = await server.createApp();
      const sql = server.deps.orm.em.fork().getConnection();
      const id = `msg_${randomBytes(6).toString('hex')}`;
      await sql.execute(
        `insert into webhook_event (id, app_id, type, body, created_at) values (?, ?, 'customer.updated', '{}', now() - interval '400 days')`,
        [id, appId],
      );
      expect(await server.services.webhookDispatcher.purge()).toBe(0);
      const left = await sql.execute<{ n: string }[]>(
        'select count(*) as n from webhook_event where id = ?',
        [id],
      );
      expect(left[0]!.n).toBe('1');
    } finally {
      await server.close();
    }
  });
});
