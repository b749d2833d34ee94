import { randomBytes } from 'node:crypto';
import type Stripe from 'stripe';
import { withContext } from '../../src/db.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { payOnHostedPage, stripeFor } from '../helpers/stripe-fixtures.js';

/**
 * Overage: a metered feature with an overage price lets consumption go past the balance; the part past
 * it is reported to the bundled Stripe emulator as meter events (identifier: the usage id) through the
 * job queue, cancelled on refund, and billed on the renewal invoice. Real time throughout: meter events
 * are stamped with the usage's time and billed when they fall in the subscription's period.
 */
let server: TestServer;
let stripe: Stripe;
beforeAll(async () => {
  server = await startTestServer();
  stripe = stripeFor(server);
});
afterAll(async () => {
  await server.close();
});

const UPSERT = `mutation($appId: ID!, $input: PlanInput!) {
  upsertPlan(appId: $appId, input: $input) { id features }
}`;
const auth = (token: string) => ({ authorization: `Bearer ${token}` });

async function licensedPrice(unitAmount = 2000): Promise<string> {
  const price = await stripe.prices.create({
    product_data: { name: 'Plan' },
    currency: 'usd',
    unit_amount: unitAmount,
    recurring: { interval: 'month' },
  });
  return price.id;
}

/** A metered price backed by a new Billing Meter summing `value`. */
async function overagePrice(unitAmount: number): Promise<{ priceId: string; meterId: string }> {
  const meter = await stripe.billing.meters.create({
    display_name: 'Calls over the allowance',
    event_name: `calls_${randomBytes(5).toString('hex')}`,
    default_aggregation: { formula: 'sum' },
  });
  const price = await stripe.prices.create({
    product_data: { name: 'Calls overage' },
    currency: 'usd',
    unit_amount: unitAmount,
    recurring: { interval: 'month', usage_type: 'metered', meter: meter.id },
  });
  return { priceId: price.id, meterId: meter.id };
}

function upsert(appId: string, input: Record<string, unknown>) {
  return server.graphql(UPSERT, { appId, input }, server.adminToken);
}

/** A customer subscribed to `planId` through Tollgate's checkout, paid on the emulator's page. */
async function subscribed(apiKey: string, planId: string) {
  const customer = await server.http
    .post('/v1/customers')
    .set(auth(apiKey))
    .send({ email: `overage-${randomBytes(4).toString('hex')}@example.com` });
  expect(customer.status).toBe(201);
  const session = await server.http.post('/v1/checkout/session').set(auth(apiKey)).send({
    planId,
    customerId: customer.body.id,
    successUrl: 'https://s.example.com/',
    cancelUrl: 'https://s.example.com/',
  });
  expect(session.status).toBe(200);
  expect((await payOnHostedPage(session.body.url)).status).toBe(303);
  const subscription = await eventually(
    async () => {
      const res = await server.http
        .get(`/v1/subscriptions/current?customerId=${customer.body.id}`)
        .set(auth(apiKey));
      return res.status === 200 && res.body?.status === 'active' ? res.body : undefined;
    },
    { what: 'the checkout to reach Tollgate', timeoutMs: 20_000 },
  );
  const stripeSubscriptionId = await withContext(server.deps.orm, async () => {
    const [row] = await server.deps.orm.em
      .getConnection()
      .execute<{ stripe_subscription_id: string; stripe_customer_id: string }[]>(
        'select stripe_subscription_id, stripe_customer_id from subscription where id = ?',
        [subscription.id],
      );
    return row!;
  });
  return {
    customerId: customer.body.id as string,
    subscriptionId: subscription.id as string,
    stripeSubscriptionId: stripeSubscriptionId.stripe_subscription_id,
    stripeCustomerId: stripeSubscriptionId.stripe_customer_id,
  };
}

async function usageRow(id: string) {
  return withContext(server.deps.orm, async () => {
    const [row] = await server.deps.orm.em
      .getConnection()
      .execute<{ overage: string; reported: boolean; cancelled: boolean }[]>(
        `select overage, overage_reported_at is not null as reported, overage_cancelled_at is not null as cancelled
           from usage_record where id = ?`,
        [id],
      );
    return row!;
  });
}

async function metered(meterId: string, stripeCustomerId: string): Promise<number> {
  const now = Math.floor(Date.now() / 1000);
  const summaries = await stripe.billing.meters.listEventSummaries(meterId, {
    customer: stripeCustomerId,
    start_time: now - 3600,
    end_time: now + 3600,
  });
  return summaries.data[0]!.aggregated_value;
}

describe('overage prices on metered features', () => {
  it('accepts only a metered price backed by a meter, naming the field otherwise', async () => {
    const { appId } = await server.createApp();
    const planPrice = await licensedPrice();
    const licensed = await licensedPrice(500);
    const cases: Array<[string, string]> = [
      ['price_missing', 'no such price at the payment provider: price_missing'],
      [
        licensed,
        `price ${licensed} is not metered: an overage price needs recurring.usage_type=metered and a Billing Meter`,
      ],
    ];
    for (const [priceId, problem] of cases) {
      const res = await upsert(appId, {
        id: 'pro',
        name: 'Pro',
        stripePriceId: planPrice,
        features: { calls: { limit: 10, reset: 'billing_period', overage: { stripePriceId: priceId } } },
      });
      const field = 'features.calls.overage.stripePriceId';
      expect(res.body).toEqual({
        data: null,
        errors: [
          expect.objectContaining({
            message: `${field}: ${problem}`,
            extensions: { code: 'BAD_USER_INPUT', statusCode: 400, fields: [field] },
          }),
        ],
      });
    }
    const { priceId } = await overagePrice(3);
    const features = { calls: { limit: 10, reset: 'billing_period', overage: { stripePriceId: priceId } } };
    const saved = await upsert(appId, { id: 'pro', name: 'Pro', stripePriceId: planPrice, features });
    expect(saved.body).toEqual({ data: { upsertPlan: { id: 'pro', features } } });
  });

  it('allows consumption past the balance as overage, reports it once per usage, and bills it on renewal', async () => {
    const { appId, apiKey } = await server.createApp();
    const planPrice = await licensedPrice(2000);
    const { priceId, meterId } = await overagePrice(3);
    const saved = await upsert(appId, {
      id: 'metered',
      name: 'Metered',
      stripePriceId: planPrice,
      features: { calls: { limit: 10, reset: 'billing_period', overage: { stripePriceId: priceId } } },
    });
    expect(saved.body.errors).toBeUndefined();
    const hook = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: 'http://127.0.0.1:9/hook', events: ['usage.limit_reached'] });
    expect(hook.status).toBe(201);
    const sub = await subscribed(apiKey, 'metered');
    // Checkout put the overage price beside the plan's as a second item, with no quantity.
    const remote = await stripe.subscriptions.retrieve(sub.stripeSubscriptionId);
    expect(remote.items.data.map((i) => [i.price.id, i.quantity])).toEqual([
      [planPrice, 1],
      [priceId, undefined],
    ]);
    const resetsAt = new Date(remote.items.data[0]!.current_period_end * 1000).toISOString();

    const use = (amount: number) =>
      server.http
        .post('/v1/usage')
        .set(auth(apiKey))
        .send({ customerId: sub.customerId, feature: 'calls', amount });
    const first = await use(8);
    expect(first.body.balance).toEqual({
      limit: 10,
      granted: 0,
      used: 8,
      remaining: 2,
      overage: 0,
      resetsAt,
    });
    const past = await use(5);
    expect(past.status).toBe(200);
    expect(past.body).toEqual({
      id: expect.stringMatching(/^use_/),
      feature: 'calls',
      amount: 5,
      allowed: true,
      balance: { limit: 10, granted: 0, used: 13, remaining: 0, overage: 3, resetsAt },
    });
    const more = await use(4);
    expect(more.body).toMatchObject({ allowed: true, balance: { used: 17, remaining: 0, overage: 7 } });
    const last = await use(2);
    expect(last.body).toMatchObject({ allowed: true, balance: { used: 19, remaining: 0, overage: 9 } });
    const check = await server.http
      .get(`/v1/entitlements/check/calls?customerId=${sub.customerId}&amount=100`)
      .set(auth(apiKey));
    expect(check.body).toEqual({
      feature: 'calls',
      allowed: true,
      value: 10,
      balance: { limit: 10, granted: 0, used: 19, remaining: 0, overage: 9, resetsAt },
    });

    // The balance reached 0 once: one usage.limit_reached, from the consumption that went past it.
    const limitEvents = await withContext(server.deps.orm, () =>
      server.deps.orm.em
        .getConnection()
        .execute<{ body: string }[]>(
          `select body from webhook_event where app_id = ? and type = 'usage.limit_reached'`,
          [appId],
        ),
    );
    expect(limitEvents.map((e) => JSON.parse(e.body).data)).toEqual([
      {
        customerId: sub.customerId,
        organizationId: null,
        feature: 'calls',
        limit: 10,
        granted: 0,
        used: 13,
        remaining: 0,
        overage: 3,
        resetsAt,
      },
    ]);

    // One meter event per usage with overage (3 + 4 + 2), each marked reported.
    await eventually(async () => ((await metered(meterId, sub.stripeCustomerId)) === 9 ? true : undefined), {
      what: 'the overage to reach the emulator',
      timeoutMs: 20_000,
    });
    const ids = [past.body.id, more.body.id, last.body.id] as string[];
    for (const [index, id] of ids.entries()) {
      await eventually(async () => ((await usageRow(id)).reported ? true : undefined));
      expect(await usageRow(id)).toEqual({
        overage: String([3, 4, 2][index]),
        reported: true,
        cancelled: false,
      });
    }
    expect(await usageRow(first.body.id)).toEqual({ overage: '0', reported: false, cancelled: false });

    // A retry after a crash between the report and its mark sends the same identifiers: counted once.
    await withContext(server.deps.orm, () =>
      server.deps.orm.em
        .getConnection()
        .execute('update usage_record set overage_reported_at = null where id in (?, ?, ?)', ids),
    );
    await server.services.overageReporter.report(ids);
    await server.services.overageReporter.report(ids);
    expect(await metered(meterId, sub.stripeCustomerId)).toBe(9);

    // A refunded overage is cancelled at Stripe, so it is not billed.
    const refund = await server.http.post(`/v1/usage/${more.body.id}/refund`).set(auth(apiKey)).send({});
    expect(refund.status).toBe(200);
    expect(refund.body).toEqual({
      balance: { feature: 'calls', limit: 10, granted: 0, used: 15, remaining: 0, overage: 5, resetsAt },
    });
    await eventually(async () => ((await metered(meterId, sub.stripeCustomerId)) === 5 ? true : undefined), {
      what: 'the cancellation to reach the emulator',
      timeoutMs: 20_000,
    });
    await eventually(async () => ((await usageRow(more.body.id)).cancelled ? true : undefined));
    expect(await usageRow(more.body.id)).toEqual({ overage: '4', reported: true, cancelled: true });

    // The renewal bills the period's overage in arrears: 5 units at 3 cents, beside the plan's 20.00.
    const lastEvent = Math.floor(Date.now() / 1000);
    await eventually(() => (Math.floor(Date.now() / 1000) > lastEvent ? true : undefined));
    const renewed = server.payments.emulator!.renewSubscription(sub.stripeSubscriptionId);
    const invoice = await stripe.invoices.retrieve(String(renewed.latest_invoice));
    const lines = invoice.lines.data.map((l) => [l.pricing?.price_details?.price, l.quantity, l.amount]);
    expect(lines).toHaveLength(2);
    expect(lines).toEqual(
      expect.arrayContaining([
        [priceId, 5, 15],
        [planPrice, 1, 2000],
      ]),
    );
    expect(invoice.total).toBe(2015);
  });

  it('removes the overage item on a change to a plan without it, and then refuses past the balance', async () => {
    const { appId, apiKey } = await server.createApp();
    const meteredPrice = await licensedPrice(2000);
    const cappedPrice = await licensedPrice(1500);
    const { priceId } = await overagePrice(3);
    for (const [id, price, overage] of [
      ['metered', meteredPrice, { overage: { stripePriceId: priceId } }],
      ['capped', cappedPrice, {}],
    ] as const) {
      const saved = await upsert(appId, {
        id,
        name: id,
        stripePriceId: price,
        features: { calls: { limit: 10, reset: 'billing_period', ...overage } },
      });
      expect(saved.body.errors).toBeUndefined();
    }
    const sub = await subscribed(apiKey, 'metered');
    const prices = async () =>
      (await stripe.subscriptions.retrieve(sub.stripeSubscriptionId)).items.data.map((i) => i.price.id);
    expect(await prices()).toEqual([meteredPrice, priceId]);

    const changed = await server.http
      .post(`/v1/subscriptions/${sub.subscriptionId}/change-plan`)
      .set(auth(apiKey))
      .send({ planId: 'capped' });
    expect(changed.status).toBe(200);
    expect(changed.body.plan.id).toBe('capped');
    expect(await prices()).toEqual([cappedPrice]);

    const use = (amount: number) =>
      server.http
        .post('/v1/usage')
        .set(auth(apiKey))
        .send({ customerId: sub.customerId, feature: 'calls', amount });
    // Once the change reaches the entitlements, a check past the balance is no longer allowed.
    await eventually(async () => {
      const res = await server.http
        .get(`/v1/entitlements/check/calls?customerId=${sub.customerId}&amount=11`)
        .set(auth(apiKey));
      return res.body.allowed === false ? true : undefined;
    });
    expect((await use(10)).body).toMatchObject({ allowed: true, balance: { remaining: 0, overage: 0 } });
    const refused = await use(1);
    expect(refused.status).toBe(200);
    expect(refused.body).toEqual({
      allowed: false,
      balance: expect.objectContaining({ used: 10, remaining: 0, overage: 0 }),
    });

    // Back to the plan with overage: its metered item comes back.
    const back = await server.http
      .post(`/v1/subscriptions/${sub.subscriptionId}/change-plan`)
      .set(auth(apiKey))
      .send({ planId: 'metered' });
    expect(back.status).toBe(200);
    expect(await prices()).toEqual([meteredPrice, priceId]);
  });
});
