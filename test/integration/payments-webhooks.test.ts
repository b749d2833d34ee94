import pg from 'pg';
import type Stripe from 'stripe';
import { withContext } from '../../src/db.js';
import { ProviderNotificationsService } from '../../src/modules/subscriptions/provider-notifications.service.js';
import { SubscriptionEvents } from '../../src/modules/subscriptions/subscription-events.js';
import { eventually } from '../helpers/eventually.js';
import { blockedBy } from '../helpers/locks.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  createPaidPlan,
  payOnHostedPage,
  signedNotification,
  stripeFor,
} from '../helpers/stripe-fixtures.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * `POST /v1/webhooks/stripe`: signature checks on the raw body, each event applied exactly once (also
 * under concurrent duplicate deliveries), late events never rolling a subscription back, failures → 500.
 */

let server: TestServer;
let stripe: Stripe;
let app: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer();
  stripe = stripeFor(server);
  app = await server.createApp();
  await createPaidPlan(server, app.appId, { id: 'pro', name: 'Pro' });
  await createPaidPlan(server, app.appId, { id: 'max', name: 'Max' });
});
afterAll(async () => {
  await server.close();
});

const WEBHOOK = '/v1/webhooks/stripe';

function post(body: string, signature?: string) {
  const req = server.http.post(WEBHOOK).set('content-type', 'application/json');
  if (signature !== undefined) req.set('stripe-signature', signature);
  return req.send(body);
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const rows = await server.deps.orm.em.fork().getConnection().execute<{ n: string }[]>(sql, params);
  return Number(rows[0]!.n);
}

async function newCustomer(email: string): Promise<string> {
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${app.apiKey}`)
    .send({ email });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function checkoutUrl(customerId: string, planId = 'pro'): Promise<string> {
  const res = await server.http
    .post('/v1/checkout/session')
    .set('authorization', `Bearer ${app.apiKey}`)
    .send({ planId, customerId, successUrl: 'https://a.example/ok', cancelUrl: 'https://a.example/no' });
  expect(res.status).toBe(200);
  return res.body.url;
}

/** Pays with deliveries switched off, and returns the events Stripe would have sent for this checkout. */
async function payUndelivered(customerId: string) {
  const url = await checkoutUrl(customerId);
  const sessionId = url.split('/').pop()!;
  const emulator = server.payments.emulator!;
  emulator.setWebhookTarget(undefined);
  try {
    expect((await payOnHostedPage(url)).status).toBe(303);
  } finally {
    server.payments.connectWebhooks(`${server.url}${WEBHOOK}`);
  }
  const completed = emulator.events.find(
    (e) => e.type === 'checkout.session.completed' && e.data.object.id === sessionId,
  )!;
  return { completed, subscriptionId: completed.data.object.subscription as string };
}

async function subscriptionRow(stripeSubscriptionId: string) {
  const rows = await server.deps.orm.em
    .fork()
    .getConnection()
    .execute<{ status: string; cancel_at_period_end: boolean; plan_id: string }[]>(
      'select status, cancel_at_period_end, plan_id from subscription where stripe_subscription_id = ?',
      [stripeSubscriptionId],
    );
  return rows[0];
}

/** Tollgate's id of the subscription Stripe knows as `stripeSubscriptionId`. */
async function tollgateSubscriptionId(stripeSubscriptionId: string): Promise<string> {
  const rows = await server.deps.orm.em
    .fork()
    .getConnection()
    .execute<{ id: string }[]>('select id from subscription where stripe_subscription_id = ?', [
      stripeSubscriptionId,
    ]);
  return rows[0]!.id;
}

/** A customer whose paid checkout Tollgate has applied, and its subscription as Stripe holds it now. */
async function subscribedCustomer(email: string) {
  const customerId = await newCustomer(email);
  const { completed, subscriptionId } = await payUndelivered(customerId);
  const first = signedNotification(server, completed);
  expect((await post(first.body, first.signature)).status).toBe(200);
  const remote = await stripe.subscriptions.retrieve(subscriptionId);
  return { customerId, completed, subscriptionId, remote };
}

/** Runs `test` while the app has a webhook endpoint made with `body`, which is removed afterwards. */
async function withEndpoint(body: object, test: (secret: string) => Promise<void>): Promise<void> {
  const created = await server.http
    .post('/v1/webhook-endpoints')
    .set('authorization', `Bearer ${app.apiKey}`)
    .send(body);
  expect(created.status).toBe(201);
  try {
    await test(created.body.secret);
  } finally {
    const removed = await server.http
      .delete(`/v1/webhook-endpoints/${created.body.endpoint.id}`)
      .set('authorization', `Bearer ${app.apiKey}`);
    expect(removed.status).toBe(204);
  }
}

/**
 * Ten `customer.subscription.updated` events newer than `completed`, alternating cancel_at_period_end,
 * the newest with `newestStatus`; each delivered 4 times, all at once in a shuffled order. Returns the
 * events and the answers.
 */
async function deliverTenUpdatesFourTimes(
  completed: { [key: string]: unknown },
  remote: Stripe.Subscription,
  prefix: string,
  newestStatus: string,
) {
  const at = completed.created as number;
  const events = Array.from({ length: 10 }, (_, i) => ({
    id: `${prefix}${i}`,
    object: 'event',
    api_version: completed.api_version,
    created: at + 10 + i,
    data: {
      object: { ...remote, cancel_at_period_end: i % 2 === 1, status: i === 9 ? newestStatus : 'active' },
    },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: 'customer.subscription.updated',
  }));
  const deliveries = events.flatMap((event) => Array(4).fill(signedNotification(server, event)));
  for (let i = deliveries.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [deliveries[i], deliveries[j]] = [deliveries[j], deliveries[i]];
  }
  const answers = await Promise.all(deliveries.map((d) => post(d.body, d.signature)));
  return { events, answers };
}

describe('Stripe notification receiver', () => {
  it('refuses a missing signature with 400 and stores nothing', async () => {
    const customerId = await newCustomer('nosig@example.com');
    const { completed, subscriptionId } = await payUndelivered(customerId);
    const res = await post(JSON.stringify(completed));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      statusCode: 400,
      message: 'Missing Stripe-Signature header',
      error: 'Bad Request',
    });
    expect(await count('select count(*) as n from processed_event where id = ?', [completed.id])).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
  });

  it('refuses a bad signature, or a body changed after signing, with 400 and stores nothing', async () => {
    const customerId = await newCustomer('badsig@example.com');
    const { completed, subscriptionId } = await payUndelivered(customerId);
    const { body, signature } = signedNotification(server, completed);
    const forged = signature.replace(/v1=[0-9a-f]+/, `v1=${'0'.repeat(64)}`);
    const bad = await post(body, forged);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('Invalid Stripe-Signature: the notification could not be verified');
    const tampered = await post(body.replace(customerId, 'cus_someone_else'), signature);
    expect(tampered.status).toBe(400);
    const otherSecret = await post(body, signature.replace(/t=\d+/, 't=1'));
    expect(otherSecret.status).toBe(400);
    expect(await count('select count(*) as n from processed_event where id = ?', [completed.id])).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
  });

  it('applies the same completed-checkout event delivered 20 times concurrently exactly once', async () => {
    const customerId = await newCustomer('dupes@example.com');
    const { completed, subscriptionId } = await payUndelivered(customerId);
    const { body, signature } = signedNotification(server, completed);
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(body, signature)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(await count('select count(*) as n from subscription where customer_id = ?', [customerId])).toBe(1);
    expect(await count('select count(*) as n from processed_event where id = ?', [completed.id])).toBe(1);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({ status: 'active' });
  });

  it('never moves a subscription back when an older event arrives after a newer one', async () => {
    const { completed, subscriptionId, remote } = await subscribedCustomer('order@example.com');
    const at = completed.created as number;
    const updated = (id: string, created: number, object: Record<string, unknown>) => ({
      id,
      object: 'event',
      api_version: completed.api_version,
      created,
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'customer.subscription.updated',
    });
    const newer = signedNotification(
      server,
      updated('evt_newer_order_test', at + 20, { ...remote, cancel_at_period_end: true }),
    );
    const older = signedNotification(
      server,
      updated('evt_older_order_test', at + 10, { ...remote, status: 'past_due' }),
    );
    expect((await post(newer.body, newer.signature)).status).toBe(200);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
    });
    expect((await post(older.body, older.signature)).status).toBe(200);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
    });
    expect(
      await count('select count(*) as n from processed_event where id = ?', ['evt_older_order_test']),
    ).toBe(1);
  });

  it('applies subscription updates delivered 4 times each, concurrently and out of order, exactly once', async () => {
    const { completed, subscriptionId, remote } = await subscribedCustomer('update-dupes@example.com');
    // Ten newer events (alternating cancel_at_period_end; the newest says past_due), plus one of the
    // same second as the newest, whose state Tollgate must read from Stripe rather than trust.
    const { events, answers } = await deliverTenUpdatesFourTimes(
      completed,
      remote,
      'evt_update_dupes_',
      'past_due',
    );
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    expect(
      await count("select count(*) as n from processed_event where id like 'evt\\_update\\_dupes\\_%'", []),
    ).toBe(10);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({
      status: 'past_due',
      cancel_at_period_end: true,
    });

    // Same second as the newest applied event: Stripe's current state (active, not cancelling) wins.
    const sameSecond = signedNotification(server, {
      ...events[9]!,
      id: 'evt_update_dupes_same_second',
      data: { object: { ...remote, cancel_at_period_end: true, status: 'unpaid' } },
    });
    const again = await Promise.all(
      Array.from({ length: 4 }, () => post(sameSecond.body, sameSecond.signature)),
    );
    expect(again.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(
      await count('select count(*) as n from processed_event where id = ?', ['evt_update_dupes_same_second']),
    ).toBe(1);
    expect(await subscriptionRow(subscriptionId)).toMatchObject({
      status: 'active',
      cancel_at_period_end: false,
    });
  });

  it('does not apply a newer event over a change committed after its statement read the row: it reads the row again', async () => {
    const { completed, subscriptionId, remote } = await subscribedCustomer('stale-read@example.com');
    const statusAndInputs = async () =>
      (
        await server.deps.orm.em
          .fork()
          .getConnection()
          .execute<{ status: string; mrr_inputs: string }[]>(
            'select status, mrr_inputs from subscription where stripe_subscription_id = ?',
            [subscriptionId],
          )
      )[0];
    const counted = (await statusAndInputs())!.mrr_inputs;
    // Another writer changes the row (as an older event that moved the MRR would) and holds it.
    const other = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await other.connect();
    try {
      const { rows } = await other.query<{ pid: number }>('select pg_backend_pid() as pid');
      await other.query('begin');
      await other.query(
        `update subscription set status = 'past_due', mrr_inputs = 'changed meanwhile',
                provider_event_created = provider_event_created + 1
          where stripe_subscription_id = $1`,
        [subscriptionId],
      );
      // A newer event with the inputs the row had when the receiver's statement read it: no MRR change by
      // that read, so the statement goes to update the row, and waits for the other writer.
      const newer = signedNotification(server, {
        ...completed,
        id: 'evt_stale_read',
        type: 'customer.subscription.updated',
        created: (completed.created as number) + 100,
        data: { object: { ...remote, status: 'active' } },
      });
      // Sent now (a supertest request starts when it is awaited or `then` is called).
      const answer = post(newer.body, newer.signature).then((res) => res);
      await blockedBy(server, rows[0]!.pid, "the receiver's statement to wait for the other writer's row");
      await other.query('commit');
      expect((await answer).status).toBe(200);
    } finally {
      await other.end();
    }
    // Applied on the row as it is now: the event's state, and the MRR counted again from it (the row's
    // inputs are the event's, not the other writer's).
    expect(await statusAndInputs()).toEqual({ status: 'active', mrr_inputs: counted });
    expect(await count('select count(*) as n from processed_event where id = ?', ['evt_stale_read'])).toBe(1);
  });

  it("applies a completed checkout to a row changed in the same second by Stripe's state read under the row lock, not by what it read before", async () => {
    const customerId = await newCustomer('checkout-same-second@example.com');
    const { completed, subscriptionId } = await payUndelivered(customerId);
    const emulator = server.payments.emulator!;
    // The subscription's own notification comes first and creates the row (active).
    const created = emulator.events.find(
      (e) => e.type === 'customer.subscription.created' && e.data.object.id === subscriptionId,
    )!;
    const first = signedNotification(server, created);
    expect((await post(first.body, first.signature)).status).toBe(200);
    expect((await subscriptionRow(subscriptionId))?.status).toBe('active');
    const [{ provider_event_created: second }] = await server.deps.orm.em
      .fork()
      .getConnection()
      .execute<{ provider_event_created: string }[]>(
        'select provider_event_created from subscription where stripe_subscription_id = ?',
        [subscriptionId],
      );

    const other = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await other.connect();
    emulator.setWebhookTarget(undefined);
    try {
      const { rows } = await other.query<{ pid: number }>('select pg_backend_pid() as pid');
      await other.query('begin');
      await other.query('select 1 from subscription where stripe_subscription_id = $1 for update', [
        subscriptionId,
      ]);
      // The completed checkout, of the row's very second: its receiver reads the subscription from Stripe
      // (active), then waits for the row.
      const checkout = signedNotification(server, { ...completed, created: Number(second) });
      const answer = post(checkout.body, checkout.signature).then((res) => res);
      await blockedBy(server, rows[0]!.pid, "the checkout's import to wait for the row");
      // Meanwhile, in the same second, the subscription is canceled at Stripe and the row says so, as the
      // cancellation's own notification would have it.
      await stripe.subscriptions.cancel(subscriptionId);
      await other.query(
        `update subscription set status = 'canceled', canceled_at = now() where stripe_subscription_id = $1`,
        [subscriptionId],
      );
      await other.query('commit');
      expect((await answer).status).toBe(200);
    } finally {
      server.payments.connectWebhooks(`${server.url}${WEBHOOK}`);
      await other.end();
    }
    // `created` cannot order the two changes: the state Stripe has now is applied, not the one read before.
    expect((await stripe.subscriptions.retrieve(subscriptionId)).status).toBe('canceled');
    expect((await subscriptionRow(subscriptionId))?.status).toBe('canceled');
    expect(await count('select count(*) as n from processed_event where id = ?', [completed.id])).toBe(1);
  });

  it('applies a newer event under the row lock once its optimistic tries are spent: exactly once, announced once', async () => {
    await withEndpoint({ url: 'http://127.0.0.1:9/row-lock' }, async () => {
      const { customerId, completed, subscriptionId, remote } =
        await subscribedCustomer('row-lock@example.com');
      // The receiver's own service with no optimistic try, so every newer event takes the locked path
      // (the one a storm of deliveries for one subscription ends in).
      const locked = new ProviderNotificationsService(
        server.deps.orm,
        server.deps.payments,
        server.services.customers,
        new SubscriptionEvents(server.services.outboundEvents),
        undefined,
        undefined,
        0,
      );
      const at = completed.created as number;
      const update = (id: string, created: number, cancel: boolean) =>
        signedNotification(server, {
          id,
          object: 'event',
          api_version: completed.api_version,
          created,
          data: { object: { ...remote, cancel_at_period_end: cancel } },
          livemode: false,
          pending_webhooks: 1,
          request: { id: null, idempotency_key: null },
          type: 'customer.subscription.updated',
        });
      const apply = (delivery: { body: string; signature: string }) =>
        withContext(server.deps.orm, () =>
          locked.applyStripeNotification(
            locked.verifyStripeNotification(Buffer.from(delivery.body), delivery.signature),
          ),
        );
      const newer = update('evt_row_lock_newer', at + 20, true);
      expect(await apply(newer)).toEqual({ applied: true });
      expect(await apply(newer)).toEqual({ applied: false });
      expect(await apply(update('evt_row_lock_older', at + 10, false))).toEqual({ applied: false });
      expect(await subscriptionRow(subscriptionId)).toMatchObject({
        status: 'active',
        cancel_at_period_end: true,
      });
      expect(
        await count("select count(*) as n from processed_event where id like 'evt\\_row\\_lock\\_%'", []),
      ).toBe(2);
      const tollgateId = await tollgateSubscriptionId(subscriptionId);
      expect(
        await count(
          "select count(*) as n from webhook_event where type = 'subscription.updated' and body like ?",
          [`%"id":"${tollgateId}"%`],
        ),
      ).toBe(1);
      // Subscription events name their customer (what the test below filters on).
      expect(
        await count(
          `select count(*) as n from webhook_event where type like 'subscription.%' and body like ?`,
          [`%"${customerId}"%`],
        ),
      ).toBeGreaterThanOrEqual(2);
    });
  });

  it('records no subscription or entitlement event when the only endpoint takes other types', async () => {
    await withEndpoint({ url: 'http://127.0.0.1:9/never', events: ['customer.created'] }, async () => {
      const { customerId, completed, subscriptionId, remote } = await subscribedCustomer(
        'other-types-only@example.com',
      );
      const { answers } = await deliverTenUpdatesFourTimes(completed, remote, 'evt_other_types_', 'unpaid');
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
      expect(await subscriptionRow(subscriptionId)).toMatchObject({ status: 'unpaid' });
      // This customer's events only: other tests of the file share the app (and give it endpoints).
      expect(
        await count(
          `select count(*) as n from webhook_event
            where app_id = ? and (type like 'subscription.%' or type = 'entitlements.updated')
              and body like ?`,
          [app.appId, `%"${customerId}"%`],
        ),
      ).toBe(0);
    });
  });

  it('with a webhook endpoint, applies updates delivered 4 times each, concurrently and out of order, exactly once, each applied change announced once', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      await withEndpoint({ url: `${receiver.url}/hooks` }, async (secret) => {
        const { customerId, completed, subscriptionId, remote } = await subscribedCustomer(
          'update-dupes-endpoint@example.com',
        );
        // Ten newer events alternating cancel_at_period_end; only the newest says unpaid, which ends the
        // customer's entitlement to Pro.
        const { answers } = await deliverTenUpdatesFourTimes(
          completed,
          remote,
          'evt_endpoint_dupes_',
          'unpaid',
        );
        expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
        expect(
          await count(
            "select count(*) as n from processed_event where id like 'evt\\_endpoint\\_dupes\\_%'",
            [],
          ),
        ).toBe(10);
        expect(await subscriptionRow(subscriptionId)).toMatchObject({
          status: 'unpaid',
          cancel_at_period_end: true,
        });
        const tollgateId = await tollgateSubscriptionId(subscriptionId);
        // Every applied change is one recorded subscription.updated, and each arrives once, signed.
        const recorded = await count(
          "select count(*) as n from webhook_event where type = 'subscription.updated' and body like ?",
          [`%"id":"${tollgateId}"%`],
        );
        expect(recorded).toBeGreaterThanOrEqual(1);
        expect(recorded).toBeLessThanOrEqual(10);
        const updates = await eventually(() => {
          const got = receiver.of('subscription.updated', (d) => d.id === tollgateId);
          return got.length === recorded ? got : undefined;
        });
        expect(new Set(updates.map((r) => r.headers['webhook-id'])).size).toBe(recorded);
        for (const update of updates) expect(verify(secret, update)).toEqual(update.payload);
        // The newest event is applied exactly once whatever the order: one update says unpaid, and the
        // entitlement it ended is announced once.
        expect(updates.filter((r) => r.payload.data.status === 'unpaid')).toHaveLength(1);
        expect(updates.find((r) => r.payload.data.status === 'unpaid')!.payload.data).toMatchObject({
          id: tollgateId,
          customerId,
          status: 'unpaid',
          cancelAtPeriodEnd: true,
          plan: { id: 'pro', name: 'Pro' },
        });
        const ended = await eventually(() => {
          const got = receiver.of(
            'entitlements.updated',
            (d) => d.customerId === customerId && d.planName === null,
          );
          return got.length > 0 ? got : undefined;
        });
        expect(ended).toHaveLength(1);
        expect(ended[0]!.payload.data).toEqual({
          customerId,
          planName: null,
          features: {},
          ev: expect.any(Number),
        });
      });
    } finally {
      await receiver.close();
    }
  });

  it('keeps the subscription in sync with Stripe changes: plan, cancellation at period end, cancellation', async () => {
    const customerId = await newCustomer('sync@example.com');
    const url = await checkoutUrl(customerId);
    await payOnHostedPage(url);
    const current = () =>
      server.http
        .get('/v1/subscriptions/current')
        .query({ customerId })
        .set('authorization', `Bearer ${app.apiKey}`);
    const created = await eventually(async () => {
      const res = await current();
      return res.status === 200 ? res.body : undefined;
    });
    const session = await stripe.checkout.sessions.retrieve(url.split('/').pop()!);
    const id = String(session.subscription);

    const plans = await server.graphql(
      'query($appId: ID) { plans(appId: $appId) { id stripePriceId } }',
      { appId: app.appId },
      server.adminToken,
    );
    const maxPrice = plans.body.data.plans.find((p: { id: string }) => p.id === 'max').stripePriceId;
    const item = (await stripe.subscriptions.retrieve(id)).items.data[0]!;
    await stripe.subscriptions.update(id, {
      items: [{ id: item.id, price: maxPrice }],
      cancel_at_period_end: true,
    });
    const moved = await eventually(async () => {
      const res = await current();
      return res.body.plan?.id === 'max' ? res.body : undefined;
    });
    expect(moved).toMatchObject({ id: created.id, status: 'active', cancelAtPeriodEnd: true });
    expect(moved.canceledAt).not.toBeNull();

    await stripe.subscriptions.cancel(id);
    await eventually(async () => ((await current()).status === 404 ? true : undefined));
    const history = await server.deps.orm.em
      .fork()
      .getConnection()
      .execute<{ status: string }[]>('select status from subscription where id = ?', [created.id]);
    expect(history).toEqual([{ status: 'canceled' }]);
  });

  it('follows renewals through invoice events: a failed payment → past_due, a paid one → active again', async () => {
    const customerId = await newCustomer('renewals@example.com');
    const url = await checkoutUrl(customerId);
    await payOnHostedPage(url);
    const id = String((await stripe.checkout.sessions.retrieve(url.split('/').pop()!)).subscription);
    const current = async () =>
      (
        await server.http
          .get('/v1/subscriptions/current')
          .query({ customerId })
          .set('authorization', `Bearer ${app.apiKey}`)
      ).body;
    const first = await eventually(async () =>
      (await current()).status === 'active' ? current() : undefined,
    );

    server.payments.emulator!.renewSubscription(id, { fail: true });
    const pastDue = await eventually(async () => {
      const body = await current();
      return body.status === 'past_due' ? body : undefined;
    });
    expect(pastDue.id).toBe(first.id);
    expect(Date.parse(pastDue.currentPeriodEnd)).toBeGreaterThanOrEqual(Date.parse(first.currentPeriodEnd));
    const entitlements = await server.http
      .get('/v1/entitlements')
      .query({ customerId })
      .set('authorization', `Bearer ${app.apiKey}`);
    expect(entitlements.body.planName).toBe('Pro');

    server.payments.emulator!.renewSubscription(id);
    await eventually(async () => ((await current()).status === 'active' ? true : undefined));
    const invoices = await stripe.invoices.list({ subscription: id });
    expect(invoices.data.map((i) => i.status)).toEqual(['paid', 'open', 'paid']);
  });

  it('cancels a trial that ends without a card when the app needs no payment method', async () => {
    const trialApp = await server.createApp({ trialPaymentMethod: 'no_payment_method' });
    await createPaidPlan(server, trialApp.appId, { id: 'pro', name: 'Pro', trialDays: 7 });
    const customer = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${trialApp.apiKey}`)
      .send({ email: 'trial-end@example.com' });
    const res = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${trialApp.apiKey}`)
      .send({
        planId: 'pro',
        customerId: customer.body.id,
        successUrl: 'https://a.example/ok',
        cancelUrl: 'https://a.example/no',
      });
    await payOnHostedPage(res.body.url);
    const id = String((await stripe.checkout.sessions.retrieve(res.body.url.split('/').pop())).subscription);
    const status = async () =>
      (
        await server.deps.orm.em
          .fork()
          .getConnection()
          .execute<{ status: string }[]>('select status from subscription where stripe_subscription_id = ?', [
            id,
          ])
      )[0]?.status;
    await eventually(async () => ((await status()) === 'trialing' ? true : undefined));
    server.payments.emulator!.renewSubscription(id);
    await eventually(async () => ((await status()) === 'canceled' ? true : undefined));
  });

  it('answers 500 when an event cannot be applied, so Stripe retries, and records nothing', async () => {
    const customerId = await newCustomer('broken@example.com');
    const { completed, subscriptionId } = await payUndelivered(customerId);
    const object = {
      ...completed.data.object,
      metadata: { ...completed.data.object.metadata, tollgate_app_id: 'app_gone' },
    };
    const event = { ...completed, id: 'evt_unapplicable_test', data: { object } };
    const { body, signature } = signedNotification(server, event);
    const res = await post(body, signature);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      statusCode: 500,
      message: 'Internal server error',
      error: 'Internal Server Error',
    });
    expect(
      await count('select count(*) as n from processed_event where id = ?', ['evt_unapplicable_test']),
    ).toBe(0);
    expect(await subscriptionRow(subscriptionId)).toBeUndefined();
  });

  it('acknowledges events it does not handle, and checkouts not made by Tollgate, with 200', async () => {
    const ignored = signedNotification(server, {
      id: 'evt_ignored_test',
      object: 'event',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'prod_x', object: 'product' } },
      livemode: false,
      type: 'product.created',
    });
    const res = await post(ignored.body, ignored.signature);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect(await count('select count(*) as n from processed_event where id = ?', ['evt_ignored_test'])).toBe(
      0,
    );

    // A checkout made directly at Stripe (no Tollgate tracking metadata) is acknowledged and left alone.
    const price = (await stripe.prices.list({ limit: 1 })).data[0]!;
    const foreign = await stripe.checkout.sessions.create({
      mode: 'subscription',
      line_items: [{ price: price.id }],
      customer_email: 'foreign@example.com',
      success_url: 'https://a.example/ok',
      cancel_url: 'https://a.example/no',
    });
    await payOnHostedPage(foreign.url!);
    const event = server.payments.emulator!.events.find(
      (e) => e.type === 'checkout.session.completed' && e.data.object.id === foreign.id,
    )!;
    await eventually(async () =>
      server.payments.emulator!.deliveries.some((d) => d.eventId === event.id && d.status === 200)
        ? true
        : undefined,
    );
    expect(await count("select count(*) as n from customer where email = 'foreign@example.com'", [])).toBe(0);
  });

  it('delivers through the emulator with its own signature: a real checkout completes without help', async () => {
    const customerId = await newCustomer('delivered@example.com');
    await payOnHostedPage(await checkoutUrl(customerId));
    await eventually(async () =>
      (await count('select count(*) as n from subscription where customer_id = ?', [customerId])) === 1
        ? true
        : undefined,
    );
    const deliveries = server.payments.emulator!.deliveries.filter((d) => d.status === 200);
    expect(deliveries.length).toBeGreaterThan(0);
  });
});
