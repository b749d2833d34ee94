import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { withContext } from '../../src/db.js';
import { JobQueue } from '../../src/infra/job-queue.js';
import { createLogger } from '../../src/infra/logger.js';
import { Customer } from '../../src/modules/customers/customer.entity.js';
import { Organization } from '../../src/modules/organizations/organization.entity.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import {
  STRIPE_RECONCILE_QUEUE,
  scheduleStripeReconcile,
} from '../../src/modules/subscriptions/subscription-reconcile.jobs.js';
import { SyncCustomerSubscriptionsDocument } from '../generated/graphql.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { runCli } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { payOnHostedPage, signedNotification } from '../helpers/stripe-fixtures.js';

/**
 * Reconciliation with Stripe: `POST /v1/customers/:id/sync`, `POST /v1/organizations/:id/sync`, the
 * import of a subscription Tollgate never saw when its notification arrives, the periodic reconcile
 * (one instance at a time) and `tollgate sync`. Subscriptions are made straight in the emulator with the
 * real SDK, as an operator would in Stripe's dashboard.
 */
const logLines: Array<Record<string, unknown>> = [];
const logSink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n')) if (line.trim()) logLines.push(JSON.parse(line));
    done();
  },
});

let server: TestServer;
let appId: string;
let apiKey: string;
let billing: BillingFixtures;
let basic: Awaited<ReturnType<BillingFixtures['plan']>>;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer({
    // The shipped interval, so the schedule is there to see (the helper turns it off for other tests).
    env: { LOG_LEVEL: 'info', STRIPE_RECONCILE_INTERVAL_MINUTES: '360' },
    logDestination: logSink,
  });
  ({ appId, apiKey } = await server.createApp({ organizationsEnabled: true }));
  billing = new BillingFixtures(server, appId);
  basic = await billing.plan({ slug: 'basic', unitAmount: 1000 });
  pro = await billing.plan({ slug: 'pro', unitAmount: 3000 });
});

afterAll(async () => {
  await server?.close();
});

/** Notifications stop reaching Tollgate (they are still recorded at the emulator), as if lost. */
async function withoutNotifications<T>(fn: () => Promise<T>): Promise<T> {
  server.payments.emulator!.setWebhookTarget(undefined);
  try {
    return await fn();
  } finally {
    server.payments.connectWebhooks(`${server.url}/v1/webhooks/stripe`);
  }
}

/** A price at the emulator that no plan of the app sells. */
const strayPrice = () =>
  billing.stripe.prices.create({
    currency: 'usd',
    unit_amount: 500,
    recurring: { interval: 'month' },
    product_data: { name: 'sold elsewhere' },
  });

const syncCustomer = (id: string, token = apiKey) =>
  server.http.post(`/v1/customers/${id}/sync`).set('authorization', `Bearer ${token}`);

const rowsOf = (stripeSubscriptionId: string) =>
  withContext(server.deps.orm, () =>
    server.deps.orm.em.find(Subscription, { stripeSubscriptionId }, { populate: ['plan'] }),
  );

/** An event the emulator recorded, delivered to Tollgate signed as Stripe would. */
const deliver = (event: Record<string, unknown>) => {
  const { body, signature } = signedNotification(server, event);
  return server.http
    .post('/v1/webhooks/stripe')
    .set('content-type', 'application/json')
    .set('stripe-signature', signature)
    .send(body);
};

const settled = () =>
  eventually(() => (server.payments.emulator!.pendingDeliveries === 0 ? true : undefined), {
    what: 'the emulator to deliver every notification',
  });

describe('POST /v1/customers/:id/sync', () => {
  it('imports a subscription made straight at Stripe, finding its plan by price, and skips a stray price', async () => {
    const customer = await billing.customer();
    const { made, stray, price } = await withoutNotifications(async () => {
      const made = await billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: pro.price.id }],
      });
      const price = await strayPrice();
      const stray = await billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: price.id }],
      });
      return { made, stray, price };
    });
    const before = await server.http
      .get(`/v1/subscriptions/current?customerId=${customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(before.status).toBe(404);

    const res = await syncCustomer(customer.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      subscriptions: [
        {
          id: expect.stringMatching(/^sub_/),
          customerId: customer.id,
          organizationId: null,
          plan: { id: 'pro', name: 'PRO' },
          status: 'active',
          currentPeriodEnd: new Date(made.items.data[0]!.current_period_end * 1000).toISOString(),
          cancelAtPeriodEnd: false,
          trialEnd: null,
          canceledAt: null,
          metadata: {},
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ],
      skipped: [
        { stripeSubscriptionId: stray.id, reason: `its price ${price.id} matches no plan of the app` },
      ],
    });
    expect(
      logLines.some(
        (l) => l.msg === 'stripe reconcile: subscription skipped' && l.stripeSubscriptionId === stray.id,
      ),
    ).toBe(true);
    expect(
      logLines.some(
        (l) => l.msg === 'stripe reconcile: subscription created' && l.stripeSubscriptionId === made.id,
      ),
    ).toBe(true);

    // Again: the same row, nothing new.
    const again = await syncCustomer(customer.id);
    expect(again.body.subscriptions.map((s: { id: string }) => s.id)).toEqual([res.body.subscriptions[0].id]);
    expect(await rowsOf(made.id)).toHaveLength(1);
    expect(await rowsOf(stray.id)).toHaveLength(0);
    const current = await server.http
      .get(`/v1/subscriptions/current?customerId=${customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(current.body.id).toBe(res.body.subscriptions[0].id);
  });

  it('repairs drift: a change whose notification was lost is applied', async () => {
    const customer = await billing.customer();
    const { id, stripeSubscriptionId } = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      basic,
    );
    await settled();
    await withoutNotifications(async () => {
      await billing.stripe.subscriptions.update(stripeSubscriptionId, {
        items: [
          {
            id: (await billing.stripe.subscriptions.retrieve(stripeSubscriptionId)).items.data[0]!.id,
            price: pro.price.id,
          },
        ],
      });
      await billing.stripe.subscriptions.update(stripeSubscriptionId, { cancel_at_period_end: true });
    });
    expect((await billing.stored(id)).plan.slug).toBe('basic');
    const res = await syncCustomer(customer.id);
    expect(res.status).toBe(200);
    expect(res.body.subscriptions).toHaveLength(1);
    expect(res.body.subscriptions[0]).toMatchObject({ id, plan: { id: 'pro' }, cancelAtPeriodEnd: true });
    expect(res.body.skipped).toEqual([]);
  });

  it('follows the customer rules: API key only, another app 404, nothing to sync without a Stripe customer', async () => {
    const customer = await billing.customer();
    const token = await billing.session(customer.id);
    expect((await syncCustomer(customer.id, token)).status).toBe(403);
    const other = await server.createApp();
    const foreign = await syncCustomer(customer.id, other.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe(`Customer ${customer.id} not found`);
    const options = await syncCustomer(customer.id).send({ force: true });
    expect(options.status).toBe(400);
    expect(options.body.message).toBe('unknown field: force');
    const unlinked = await billing.customer({ linked: false });
    const empty = await syncCustomer(unlinked.id);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ subscriptions: [], skipped: [] });
  });

  it('has a GraphQL twin over the same core', async () => {
    const customer = await billing.customer();
    await withoutNotifications(() =>
      billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: basic.price.id }],
      }),
    );
    const res = await server.op(SyncCustomerSubscriptionsDocument, { customerId: customer.id }, apiKey);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data?.syncCustomerSubscriptions).toMatchObject({
      subscriptions: [{ customerId: customer.id, plan: { id: 'basic' }, status: 'active' }],
      skipped: [],
    });
  });
});

describe('POST /v1/organizations/:id/sync', () => {
  it("imports the organization's subscriptions from its own Stripe customer", async () => {
    const owner = await billing.customer();
    const organizationId = await billing.organization([{ customerId: owner.id, role: 'owner' }]);
    const stripeCustomer = await billing.stripe.customers.create({ name: 'Acme' });
    await withContext(server.deps.orm, () =>
      server.deps.orm.em.nativeUpdate(
        Organization,
        { id: organizationId },
        { paymentCustomerId: stripeCustomer.id },
      ),
    );
    const made = await withoutNotifications(() =>
      billing.stripe.subscriptions.create({
        customer: stripeCustomer.id,
        items: [{ price: pro.price.id }],
        trial_period_days: 7,
      }),
    );
    const res = await server.http
      .post(`/v1/organizations/${organizationId}/sync`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(res.status).toBe(200);
    expect(res.body.skipped).toEqual([]);
    expect(res.body.subscriptions).toHaveLength(1);
    expect(res.body.subscriptions[0]).toMatchObject({
      customerId: null,
      organizationId,
      plan: { id: 'pro' },
      status: 'trialing',
      trialEnd: new Date(made.trial_end! * 1000).toISOString(),
    });

    const other = await server.createApp();
    expect(
      (
        await server.http
          .post(`/v1/organizations/${organizationId}/sync`)
          .set('authorization', `Bearer ${other.apiKey}`)
      ).status,
    ).toBe(403); // organizations are not enabled for that app
    const enabled = await server.createApp({ organizationsEnabled: true });
    expect(
      (
        await server.http
          .post(`/v1/organizations/${organizationId}/sync`)
          .set('authorization', `Bearer ${enabled.apiKey}`)
      ).status,
    ).toBe(404);
  });
});

describe('notifications about a subscription Tollgate never saw', () => {
  it('imports one made at Stripe for a linked customer, and leaves one with a stray price out', async () => {
    const customer = await billing.customer();
    const made = await billing.stripe.subscriptions.create({
      customer: customer.stripeCustomerId!,
      items: [{ price: basic.price.id }],
    });
    const row = await eventually(async () => (await rowsOf(made.id))[0], {
      what: 'the created notification to import the subscription',
    });
    expect(row.customer?.id).toBe(customer.id);
    expect(row.plan.slug).toBe('basic');
    expect(row.status).toBe('active');

    const price = await strayPrice();
    const stray = await billing.stripe.subscriptions.create({
      customer: customer.stripeCustomerId!,
      items: [{ price: price.id }],
    });
    await settled();
    expect(await rowsOf(stray.id)).toHaveLength(0);
    expect(
      logLines.some(
        (l) =>
          l.msg === 'stripe notification: subscription not imported' && l.stripeSubscriptionId === stray.id,
      ),
    ).toBe(true);
  });

  it('acknowledges and ignores one tracked to an app this Tollgate does not have', async () => {
    const customer = await billing.customer();
    const made = await withoutNotifications(() =>
      billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: pro.price.id }],
        metadata: {
          tollgate_app_id: 'app_elsewhere',
          tollgate_plan_id: 'pro',
          tollgate_customer_id: 'cus_x',
        },
      }),
    );
    const created = server.payments.emulator!.events.find(
      (e) => e.type === 'customer.subscription.created' && e.data.object.id === made.id,
    )!;
    const res = await deliver(created);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect(await rowsOf(made.id)).toHaveLength(0);
  });

  it('makes one row whichever of checkout.session.completed and customer.subscription.created comes first', async () => {
    const customer = await billing.customer();
    const buyers = [
      { customerId: customer.id },
      { email: `first-${Date.now()}@example.com` },
      { customerId: (await billing.customer()).id },
      { email: `second-${Date.now()}@example.com` },
    ];
    const cases = await withoutNotifications(async () => {
      const made = [];
      for (const buyer of buyers) {
        const checkout = await server.http
          .post('/v1/checkout/session')
          .set('authorization', `Bearer ${apiKey}`)
          .send({
            planId: 'pro',
            successUrl: 'https://app.example.com/ok',
            cancelUrl: 'https://app.example.com/no',
            ...buyer,
          });
        expect(checkout.status).toBe(200);
        const paid = await payOnHostedPage(checkout.body.url);
        expect(paid.status).toBe(303);
        const sessionId = new URL(checkout.body.url).pathname.split('/').pop()!;
        const completed = server.payments.emulator!.events.find(
          (e) => e.type === 'checkout.session.completed' && e.data.object.id === sessionId,
        )!;
        const stripeSubscriptionId = completed.data.object.subscription as string;
        const created = server.payments.emulator!.events.find(
          (e) => e.type === 'customer.subscription.created' && e.data.object.id === stripeSubscriptionId,
        )!;
        made.push({ buyer, stripeSubscriptionId, completed, created });
      }
      return made;
    });
    // Both at once, in both orders.
    const answers = await Promise.all(
      cases.flatMap(({ completed, created }, i) =>
        i % 2 === 0 ? [deliver(completed), deliver(created)] : [deliver(created), deliver(completed)],
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    for (const { buyer, stripeSubscriptionId } of cases) {
      const rows = await rowsOf(stripeSubscriptionId);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.plan.slug).toBe('pro');
      expect(rows[0]!.status).toBe('active');
      if ('customerId' in buyer) {
        expect(rows[0]!.customer?.id).toBe(buyer.customerId);
      } else {
        const customers = await withContext(server.deps.orm, () =>
          server.deps.orm.em.find(Customer, { app: appId, emailLower: buyer.email }),
        );
        expect(customers).toHaveLength(1);
        expect(rows[0]!.customer?.id).toBe(customers[0]!.id);
        expect(customers[0]!.paymentCustomerId).toBe(rows[0]!.stripeCustomerId);
      }
    }
    // Delivered again later, in the other order: still one row each, nothing applied twice.
    const replays = await Promise.all(
      cases.flatMap(({ completed, created }) => [deliver(created), deliver(completed)]),
    );
    expect(replays.map((r) => r.status)).toEqual(replays.map(() => 200));
    for (const { stripeSubscriptionId } of cases) expect(await rowsOf(stripeSubscriptionId)).toHaveLength(1);
  });
});

describe('the periodic reconcile', () => {
  it('repairs every linked customer of the app and logs what it changed', async () => {
    const customer = await billing.customer();
    const made = await withoutNotifications(() =>
      billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: pro.price.id }],
      }),
    );
    const report = await server.services.subscriptionReconcile.reconcile({ appId });
    const created = report.created.find((c) => c.stripeSubscriptionId === made.id);
    expect(created).toEqual({
      subscriptionId: expect.stringMatching(/^sub_/),
      stripeSubscriptionId: made.id,
    });
    expect(report.contexts).toBeGreaterThan(0);
    expect(
      logLines.some(
        (l) =>
          l.msg === 'stripe reconcile: subscription created' &&
          l.stripeSubscriptionId === made.id &&
          l.customerId === customer.id,
      ),
    ).toBe(true);
    expect(logLines.some((l) => l.msg === 'stripe reconcile: done' && l.appId === appId)).toBe(true);
    // A second run finds nothing left to change for it.
    const second = await server.services.subscriptionReconcile.reconcile({ appId });
    expect(second.created.find((c) => c.stripeSubscriptionId === made.id)).toBeUndefined();
    expect(second.updated.find((c) => c.stripeSubscriptionId === made.id)).toBeUndefined();
  });

  it('is scheduled on the job queue, and a queued run imports what the notifications missed', async () => {
    const schema = server.deps.config.jobQueue.schema;
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query(`select cron, timezone from "${schema}".schedule where name = $1`, [
        STRIPE_RECONCILE_QUEUE,
      ]);
      // STRIPE_RECONCILE_INTERVAL_MINUTES' default, 360: every six hours.
      expect(rows).toEqual([{ cron: '0 */6 * * *', timezone: 'UTC' }]);
    } finally {
      await client.end();
    }
    const customer = await billing.customer();
    const made = await withoutNotifications(() =>
      billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: pro.price.id }],
      }),
    );
    await withContext(server.deps.orm, () =>
      server.deps.jobs.enqueue(server.deps.orm.em, STRIPE_RECONCILE_QUEUE, [{ data: {} }]),
    );
    const row = await eventually(async () => (await rowsOf(made.id))[0], {
      what: 'the queued reconcile to import the subscription',
      // Workers poll the queue every two seconds.
      timeoutMs: 20_000,
    });
    expect(row.customer?.id).toBe(customer.id);
    expect(row.plan.slug).toBe('pro');
  });

  it('schedules with an interval, and a start with 0 takes the schedule away', async () => {
    const schema = `jobs_${randomBytes(6).toString('hex')}`;
    const jobs = await JobQueue.start({
      connectionString: process.env.TEST_DATABASE_URL!,
      logger: createLogger('silent'),
      schema,
      superviseIntervalSeconds: 1,
      workers: true,
    });
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await client.connect();
    const schedules = () =>
      client.query(`select cron, timezone from "${schema}".schedule where name = $1`, [
        STRIPE_RECONCILE_QUEUE,
      ]);
    try {
      await scheduleStripeReconcile(jobs, 720, async () => undefined);
      expect((await schedules()).rows).toEqual([{ cron: '0 */12 * * *', timezone: 'UTC' }]);
      await scheduleStripeReconcile(jobs, 0, async () => undefined);
      expect((await schedules()).rowCount).toBe(0);
    } finally {
      await client.end();
      await jobs.stop();
    }
  });

  it('runs one reconciliation at a time across instances; a slot that comes meanwhile adds nothing', async () => {
    const schema = `jobs_${randomBytes(6).toString('hex')}`;
    const open = () =>
      JobQueue.start({
        connectionString: process.env.TEST_DATABASE_URL!,
        logger: createLogger('silent'),
        schema,
        superviseIntervalSeconds: 1,
        workers: true,
      });
    const instances = [await open(), await open()];
    let active = 0;
    let most = 0;
    let runs = 0;
    let release!: () => void;
    let gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      for (const jobs of instances) {
        // Interval 0: no cron slot of its own; the test queues the runs itself.
        await scheduleStripeReconcile(jobs, 0, async () => {
          active += 1;
          runs += 1;
          most = Math.max(most, active);
          await gate;
          active -= 1;
        });
      }
      const enqueue = (jobs: JobQueue) =>
        withContext(server.deps.orm, () =>
          jobs.enqueue(server.deps.orm.em, STRIPE_RECONCILE_QUEUE, [{ data: {} }]),
        );
      await enqueue(instances[0]!);
      await eventually(() => (runs === 1 ? true : undefined), {
        what: 'the first run to start',
        timeoutMs: 20_000,
      });
      // Both instances try to add the next slot's run while the first one runs: neither is kept.
      await Promise.all([enqueue(instances[0]!), enqueue(instances[1]!)]);
      const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await client.connect();
      try {
        const { rows } = await client.query(`select state from "${schema}".job where name = $1`, [
          STRIPE_RECONCILE_QUEUE,
        ]);
        expect(rows).toEqual([{ state: 'active' }]);
        const schedules = await client.query(`select 1 from "${schema}".schedule where name = $1`, [
          STRIPE_RECONCILE_QUEUE,
        ]);
        expect(schedules.rowCount).toBe(0);
        release();
        await eventually(() => (active === 0 ? true : undefined), { what: 'the first run to end' });
        // The queue holds the first job as active until pg-boss records it completed, a moment after the
        // handler returns; a job added before that would be refused like the slot above.
        await eventually(
          async () => {
            const unfinished = await client.query(
              `select state from "${schema}".job where name = $1 and state in ('created', 'retry', 'active')`,
              [STRIPE_RECONCILE_QUEUE],
            );
            return unfinished.rowCount === 0 ? true : undefined;
          },
          { what: 'the first job to be recorded completed' },
        );
      } finally {
        await client.end();
      }
      gate = Promise.resolve();
      await enqueue(instances[1]!);
      await eventually(() => (runs === 2 ? true : undefined), { what: 'the next run', timeoutMs: 20_000 });
      expect(most).toBe(1);
    } finally {
      release();
      await Promise.all(instances.map((jobs) => jobs.stop()));
    }
  });
});

describe('tollgate sync --app', () => {
  it('runs the reconcile once for the app and prints what it changed as JSON', async () => {
    const customer = await billing.customer();
    const made = await withoutNotifications(() =>
      billing.stripe.subscriptions.create({
        customer: customer.stripeCustomerId!,
        items: [{ price: basic.price.id }],
      }),
    );
    const env = {
      DATABASE_URL: process.env.TEST_DATABASE_URL,
      LOG_LEVEL: 'silent',
      STRIPE_SECRET_KEY: 'sk_test_cli_sync',
      STRIPE_WEBHOOK_SECRET: 'whsec_cli_sync',
      STRIPE_API_BASE: server.payments.apiBase!,
    };
    const res = await runCli(['sync', '--app', appId], env);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report.appId).toBe(appId);
    expect(report.created).toContainEqual({
      subscriptionId: expect.stringMatching(/^sub_/),
      stripeSubscriptionId: made.id,
    });
    expect(await rowsOf(made.id)).toHaveLength(1);

    const unknown = await runCli(['sync', '--app', 'app_missing'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('tollgate: App app_missing not found\n');
  });
});
