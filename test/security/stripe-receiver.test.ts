import { request } from 'node:http';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import Stripe from 'stripe';
import { createScratchDatabase, dropDatabase, withServerClient } from '../../src/infra/database-admin.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, signedNotification } from '../helpers/stripe-fixtures.js';

/**
 * `POST /v1/webhooks/stripe` refuses (400, logged) what no retry can mend — a signature dated beyond the
 * tolerance in the future, an event missing what its type requires — and still fails (500) what may
 * apply later, so Stripe retries. Nothing is written by a refused or failed delivery.
 */

const WEBHOOK = '/v1/webhooks/stripe';

let server: TestServer;
let app: { appId: string; apiKey: string };
const logLines: string[] = [];

/** Every log line of the servers this file starts, to check what a refusal logs. */
const logSink = new Writable({
  write(chunk, _encoding, callback) {
    logLines.push(...String(chunk).split('\n').filter(Boolean));
    callback();
  },
});

beforeAll(async () => {
  server = await startTestServer({ env: { LOG_LEVEL: 'info' }, logDestination: logSink });
  app = await server.createApp();
  await createPaidPlan(server, app.appId, { id: 'pro', name: 'Pro' });
});
afterAll(async () => {
  await server.close();
});

function post(body: string, signature: string, target = server) {
  return target.http
    .post(WEBHOOK)
    .set('content-type', 'application/json')
    .set('stripe-signature', signature)
    .send(body);
}

/** Signs as Stripe does, at a chosen time (Unix seconds). */
function signedAt(event: unknown, timestamp: number): { body: string; signature: string } {
  const body = JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret: server.payments.webhookSecret,
    timestamp,
  });
  return { body, signature };
}

const now = () => Math.floor(Date.now() / 1000);

async function sql<T>(query: string, params: unknown[] = [], target = server): Promise<T[]> {
  return target.deps.orm.em.fork().getConnection().execute<T[]>(query, params);
}

async function processed(eventId: string, target = server): Promise<number> {
  const rows = await sql<{ n: string }>(
    'select count(*) as n from processed_event where id = ?',
    [eventId],
    target,
  );
  return Number(rows[0]!.n);
}

async function subscriptionRow(stripeSubscriptionId: string, target = server) {
  const rows = await sql<{ status: string; cancel_at_period_end: boolean; provider_event_created: string }>(
    'select status, cancel_at_period_end, provider_event_created from subscription where stripe_subscription_id = ?',
    [stripeSubscriptionId],
    target,
  );
  return rows[0];
}

/** The warning the receiver logged for a refused event, parsed. */
function refusalLogged(eventId: string): Record<string, unknown> | undefined {
  return logLines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((entry) => entry.msg === 'Stripe notification refused' && entry.eventId === eventId);
}

/** The lines that name one event (an acknowledged one's is its request's access line), parsed. */
function receiverLines(eventId: string): Record<string, unknown>[] {
  return logLines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => (entry.stripeEvent as { id?: string } | undefined)?.id === eventId);
}

let customers = 0;
/** Pays a checkout with deliveries switched off; returns the completed-checkout event Stripe would send. */
async function paidCheckout(target = server, apiKey = app.apiKey) {
  customers += 1;
  const customer = await target.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email: `receiver-${customers}@example.com` });
  expect(customer.status).toBe(201);
  const checkout = await target.http
    .post('/v1/checkout/session')
    .set('authorization', `Bearer ${apiKey}`)
    .send({
      planId: 'pro',
      customerId: customer.body.id,
      successUrl: 'https://a.example/ok',
      cancelUrl: 'https://a.example/no',
    });
  expect(checkout.status).toBe(200);
  const sessionId = checkout.body.url.split('/').pop();
  const emulator = target.payments.emulator!;
  emulator.setWebhookTarget(undefined);
  try {
    expect((await payOnHostedPage(checkout.body.url)).status).toBe(303);
  } finally {
    target.payments.connectWebhooks(`${target.url}${WEBHOOK}`);
  }
  const completed = emulator.events.find(
    (e) => e.type === 'checkout.session.completed' && e.data.object.id === sessionId,
  )!;
  const subscriptionEvent = emulator.events.find(
    (e) =>
      e.type.startsWith('customer.subscription.') && e.data.object.id === completed.data.object.subscription,
  )!;
  return {
    completed,
    subscriptionId: completed.data.object.subscription as string,
    subscription: subscriptionEvent.data.object as Record<string, unknown>,
  };
}

/** A checkout whose subscription Tollgate already holds (its completed-checkout event applied). */
async function appliedSubscription(target = server, apiKey = app.apiKey) {
  const paid = await paidCheckout(target, apiKey);
  const { body, signature } = signedNotification(target, paid.completed);
  expect((await post(body, signature, target)).status).toBe(200);
  expect(await subscriptionRow(paid.subscriptionId, target)).toMatchObject({ cancel_at_period_end: false });
  return paid;
}

/** A `customer.subscription.updated` event as Stripe would send it, one second after the last one applied. */
function subscriptionUpdated(eventId: string, object: Record<string, unknown>, created = now() + 1) {
  return {
    id: eventId,
    object: 'event',
    api_version: '2025-01-27.acacia',
    created,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: 'customer.subscription.updated',
  };
}

function without(object: Record<string, unknown>, field: string): Record<string, unknown> {
  const copy = { ...object };
  delete copy[field];
  return copy;
}

const badRequest = (message: string) => ({ statusCode: 400, message, error: 'Bad Request' });

/** Sends `body` to the receiver over a raw connection: declared (Content-Length) or chunked. */
function postRaw(
  body: Buffer,
  signature: string,
  framing: 'declared' | 'chunked',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {
      'content-type': 'application/json; charset=utf-8',
      'stripe-signature': signature,
    };
    if (framing === 'declared') headers['content-length'] = body.length;
    // A connection of its own, closed after the answer: nothing is left open when the file ends.
    const req = request(`${server.url}${WEBHOOK}`, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    // In two writes, so a chunked body comes in two chunks.
    req.write(body.subarray(0, 100));
    req.end(body.subarray(100));
  });
}

describe('the body', () => {
  it('is verified on the exact bytes sent, whether its length is declared or it comes in chunks', async () => {
    for (const framing of ['declared', 'chunked'] as const) {
      const { completed, subscriptionId } = await paidCheckout();
      const { body, signature } = signedNotification(server, completed);
      const res = await postRaw(Buffer.from(body), signature, framing);
      expect(res).toEqual({ status: 200, body: '{"received":true}' });
      expect(await processed(completed.id)).toBe(1);
      expect(await subscriptionRow(subscriptionId)).toMatchObject({ status: 'active' });
    }
  });

  it('refuses a body over 100 KiB with 413, declared or chunked, and writes nothing', async () => {
    for (const framing of ['declared', 'chunked'] as const) {
      const { completed, subscriptionId } = await paidCheckout();
      const padded = { ...completed, padding: 'x'.repeat(100 * 1024) };
      const { body, signature } = signedNotification(server, padded);
      const res = await postRaw(Buffer.from(body), signature, framing);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ statusCode: 413 });
      expect(await processed(completed.id)).toBe(0);
      expect(await subscriptionRow(subscriptionId)).toBeUndefined();
    }
  });
});

describe('signature timestamps', () => {
  it('refuses a validly signed event dated an hour in the future with 400, logs it and writes nothing', async () => {
    const { completed, subscriptionId } = await paidCheckout();
    const { body, signature } = signedAt(completed, now() + 3600);
    const res = await post(body, signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(badRequest('Invalid Stripe-Signature: its timestamp lies in the future'));
    expect(await processed(completed.id)).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
    expect(
      logLines.some((line) => line.includes('Stripe notification refused') && line.includes('in the future')),
    ).toBe(true);
  });

  it('refuses a signature from beyond the tolerance in the past, as the SDK does', async () => {
    const { completed, subscriptionId } = await paidCheckout();
    const { body, signature } = signedAt(completed, now() - 3600);
    const res = await post(body, signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(badRequest('Invalid Stripe-Signature: the notification could not be verified'));
    expect(await processed(completed.id)).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
  });

  it('accepts a signature a little ahead of this clock (within the tolerance): clocks drift', async () => {
    const { completed, subscriptionId } = await paidCheckout();
    const { body, signature } = signedAt(completed, now() + 60);
    const res = await post(body, signature);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect(await processed(completed.id)).toBe(1);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({ status: 'active' });
  });
});

describe('events missing what their type requires', () => {
  it('refuses a completed checkout without data.object with 400 naming the event, logs it, writes nothing', async () => {
    const { completed, subscriptionId } = await paidCheckout();
    const event = { ...completed, id: 'evt_receiver_no_object', data: {} };
    const { body, signature } = signedNotification(server, event);
    const res = await post(body, signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_no_object (checkout.session.completed) cannot be applied: data.object is missing',
      ),
    );
    expect(await processed('evt_receiver_no_object')).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
    expect(refusalLogged('evt_receiver_no_object')).toMatchObject({
      level: 40,
      eventType: 'checkout.session.completed',
      problems: ['data.object is missing'],
    });
  });

  it('refuses a completed checkout with no data at all, and one whose object has no id', async () => {
    const { completed, subscriptionId } = await paidCheckout();
    const first = signedNotification(server, without({ ...completed, id: 'evt_receiver_no_data' }, 'data'));
    const res = await post(first.body, first.signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_no_data (checkout.session.completed) cannot be applied: data is missing',
      ),
    );
    const object = without(completed.data.object, 'id');
    const second = signedNotification(server, { ...completed, id: 'evt_receiver_no_id', data: { object } });
    const res2 = await post(second.body, second.signature);
    expect(res2.status).toBe(400);
    expect(res2.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_no_id (checkout.session.completed) cannot be applied: data.object.id is missing',
      ),
    );
    expect(await processed('evt_receiver_no_data')).toBe(0);
    expect(await processed('evt_receiver_no_id')).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
  });

  it('refuses a subscription event whose object lacks items, or id, and leaves the subscription as it was', async () => {
    const { subscriptionId, subscription } = await appliedSubscription();
    const before = await subscriptionRow(subscriptionId);
    const noItems = without({ ...subscription, cancel_at_period_end: true }, 'items');
    const withoutItems = signedNotification(server, subscriptionUpdated('evt_receiver_no_items', noItems));
    const res = await post(withoutItems.body, withoutItems.signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_no_items (customer.subscription.updated) cannot be applied: data.object.items is missing',
      ),
    );
    expect(refusalLogged('evt_receiver_no_items')).toMatchObject({
      eventType: 'customer.subscription.updated',
      problems: ['data.object.items is missing'],
    });

    const noId = without({ ...subscription, cancel_at_period_end: true }, 'id');
    const withoutId = signedNotification(server, subscriptionUpdated('evt_receiver_no_sub_id', noId));
    const res2 = await post(withoutId.body, withoutId.signature);
    expect(res2.status).toBe(400);
    expect(res2.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_no_sub_id (customer.subscription.updated) cannot be applied: data.object.id is missing',
      ),
    );
    expect(await processed('evt_receiver_no_items')).toBe(0);
    expect(await processed('evt_receiver_no_sub_id')).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toEqual(before);
  });

  it('names at most five problems of an event, and how many more there are', async () => {
    const { body, signature } = signedNotification(
      server,
      subscriptionUpdated('evt_receiver_many_problems', { trial_end: 'soon' }),
    );
    const res = await post(body, signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_many_problems (customer.subscription.updated) cannot be applied: ' +
          'data.object.id is missing; data.object.customer is missing; data.object.status is missing; ' +
          'data.object.items is missing; data.object.cancel_at_period_end is missing; and 1 more',
      ),
    );
    expect(await processed('evt_receiver_many_problems')).toBe(0);
  });

  it('refuses an invoice event without its object, and a body that is not an event object', async () => {
    const invoice = signedNotification(server, {
      id: 'evt_receiver_invoice',
      object: 'event',
      created: now(),
      data: { object: null },
      type: 'invoice.paid',
    });
    const res = await post(invoice.body, invoice.signature);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      badRequest(
        'Stripe event evt_receiver_invoice (invoice.paid) cannot be applied: data.object: Invalid input: expected object, received null',
      ),
    );
    expect(await processed('evt_receiver_invoice')).toBe(0);

    for (const body of ['null', '[]', '"event"', '{"type":"checkout.session.completed"}']) {
      const signature = Stripe.webhooks.generateTestHeaderString({
        payload: body,
        secret: server.payments.webhookSecret,
      });
      const answer = await post(body, signature);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(answer.body.message).toMatch(/^Stripe event cannot be applied: /);
    }
  });

  it('refuses, never fails, a subscription event with any combination of required fields removed', async () => {
    const { subscriptionId, subscription } = await appliedSubscription();
    const before = await subscriptionRow(subscriptionId);
    const required = ['id', 'customer', 'status', 'items', 'cancel_at_period_end'] as const;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.subarray([...required], { minLength: 1 }),
        // Absent, or a value none of these fields can take (`{}` as `items` lacks its `data`).
        fc.constantFrom(undefined, null, 42, [], {}),
        async (removed, replacement) => {
          run += 1;
          const object: Record<string, unknown> = { ...subscription, cancel_at_period_end: true };
          for (const field of removed) {
            if (replacement === undefined) delete object[field];
            else object[field] = replacement;
          }
          const eventId = `evt_receiver_prop_${run}`;
          const { body, signature } = signedNotification(server, subscriptionUpdated(eventId, object));
          const res = await post(body, signature);
          expect(res.status).toBe(400);
          expect(res.body.message).toMatch(
            new RegExp(
              `^Stripe event ${eventId} \\(customer\\.subscription\\.updated\\) cannot be applied: data\\.object\\.`,
            ),
          );
          expect(await processed(eventId)).toBe(0);
        },
      ),
      { numRuns: 25 },
    );
    expect(await subscriptionRow(subscriptionId)).toEqual(before);
  });
});

describe('events that cannot be applied now', () => {
  it('answers 500 when the database refuses the change, writes nothing, and applies the retried delivery', async () => {
    const { subscriptionId, subscription } = await appliedSubscription();
    const before = await subscriptionRow(subscriptionId);
    // A real database failure in the middle of applying: the row refuses every update until released.
    await sql(
      `create or replace function receiver_test_refuse() returns trigger language plpgsql as
       $$ begin raise exception 'subscription % is frozen for a test', old.stripe_subscription_id; end $$`,
    );
    await sql(
      `create trigger receiver_test_refuse before update on subscription for each row
       when (old.stripe_subscription_id = '${subscriptionId}') execute function receiver_test_refuse()`,
    );
    const event = subscriptionUpdated('evt_receiver_db_refuses', {
      ...subscription,
      cancel_at_period_end: true,
    });
    const { body, signature } = signedNotification(server, event);
    try {
      const res = await post(body, signature);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        statusCode: 500,
        message: 'Internal server error',
        error: 'Internal Server Error',
      });
      expect(await processed('evt_receiver_db_refuses')).toBe(0);
      expect(await subscriptionRow(subscriptionId)).toEqual(before);
      expect(refusalLogged('evt_receiver_db_refuses')).toBeUndefined();
      expect(receiverLines('evt_receiver_db_refuses')).toEqual([
        expect.objectContaining({
          level: 40,
          msg: 'Stripe notification failed: not acknowledged, Stripe will deliver it again',
          stripeEvent: { type: 'customer.subscription.updated', id: 'evt_receiver_db_refuses' },
          reason: expect.stringContaining(`subscription ${subscriptionId} is frozen for a test`),
        }),
      ]);
    } finally {
      await sql('drop trigger if exists receiver_test_refuse on subscription');
      await sql('drop function if exists receiver_test_refuse()');
    }

    // Stripe's retry, once the database takes the change again, applies it.
    const retried = await post(body, signature);
    expect(retried.status).toBe(200);
    expect(await processed('evt_receiver_db_refuses')).toBe(1);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
    });
  });
});

describe('an event arriving while the database is away', () => {
  // A server of its own on a database of its own, so taking that database away disturbs no other test.
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
  const name = `tollgate_receiver_${process.pid}_${Date.now()}`;
  const admin = (query: string) => withServerClient(serverUrl, (client) => client.query(query));
  let own: TestServer | undefined;
  let ownApp: { appId: string; apiKey: string };
  beforeAll(async () => {
    own = await startTestServer({
      env: { DATABASE_URL: await createScratchDatabase(serverUrl, name), LOG_LEVEL: 'warn' },
      logDestination: logSink,
    });
    ownApp = await own.createApp();
    await createPaidPlan(own, ownApp.appId, { id: 'pro', name: 'Pro' });
  }, 120_000);
  afterAll(async () => {
    await admin(`alter database ${name} allow_connections true`);
    await own?.close();
    await dropDatabase(serverUrl, name);
  });

  it('answers 503 while its database refuses connections, writes nothing, and applies the retry after', async () => {
    const target = own!;
    const { subscriptionId, subscription } = await appliedSubscription(target, ownApp.apiKey);
    const before = await subscriptionRow(subscriptionId, target);
    const event = subscriptionUpdated('evt_receiver_db_down', {
      ...subscription,
      cancel_at_period_end: true,
    });
    const { body, signature } = signedNotification(target, event);

    // The database goes away under the running server: open connections are cut, new ones refused.
    await admin(`alter database ${name} allow_connections false`);
    await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`);
    // Whether the request meets a pooled connection that was cut or opens a new one that is refused, the
    // outage answers alike: 503, which Stripe retries.
    const res = await post(body, signature, target);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      statusCode: 503,
      message: 'The service is temporarily unavailable, try again later',
      error: 'Service Unavailable',
    });
    expect(refusalLogged('evt_receiver_db_down')).toBeUndefined();

    await admin(`alter database ${name} allow_connections true`);
    expect(await processed('evt_receiver_db_down', target)).toBe(0);
    expect(await subscriptionRow(subscriptionId, target)).toEqual(before);
    const retried = await post(body, signature, target);
    expect(retried.status).toBe(200);
    expect(await subscriptionRow(subscriptionId, target)).toMatchObject({ cancel_at_period_end: true });
  });
});

describe('log lines name the event', () => {
  it('says on the access line which event was applied, and which redelivery had nothing to apply', async () => {
    const paid = await appliedSubscription();
    const id = paid.completed.id as string;
    const accessLine = {
      req: expect.objectContaining({ method: 'POST', url: '/v1/webhooks/stripe' }),
      res: { statusCode: 200 },
    };
    expect(receiverLines(id)).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'Stripe notification applied',
        stripeEvent: { type: 'checkout.session.completed', id },
        applied: true,
        ...accessLine,
      }),
    ]);
    const { body, signature } = signedNotification(server, paid.completed);
    expect((await post(body, signature)).status).toBe(200);
    expect(receiverLines(id)).toHaveLength(2);
    expect(receiverLines(id)[1]).toEqual(
      expect.objectContaining({
        level: 30,
        msg: 'Stripe notification acknowledged, nothing to apply',
        stripeEvent: { type: 'checkout.session.completed', id },
        applied: false,
        ...accessLine,
      }),
    );
  });

  it('names the type and id a refused body claims, and nothing of a body that is not an event', async () => {
    const event = {
      id: 'evt_receiver_bad_signature',
      type: 'invoice.paid',
      created: now(),
      data: { object: {} },
    };
    const res = await post(JSON.stringify(event), 't=1,v1=0000');
    expect(res.status).toBe(400);
    expect(receiverLines('evt_receiver_bad_signature')).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'Stripe notification refused',
        stripeEvent: { type: 'invoice.paid', id: 'evt_receiver_bad_signature' },
      }),
    ]);
    const before = logLines.length;
    expect((await post('not json', 't=1,v1=0000')).status).toBe(400);
    const refusal = logLines
      .slice(before)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((entry) => entry.msg === 'Stripe notification refused');
    expect(refusal).toBeDefined();
    expect(refusal).not.toHaveProperty('stripeEvent');
  });
});
