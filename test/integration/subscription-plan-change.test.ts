import { withContext } from '../../src/db.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import {
  ChangeSubscriptionPlanDocument,
  PreviewSubscriptionPlanChangeDocument,
} from '../generated/graphql.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `POST /v1/subscriptions/:id/change-plan` and `changeSubscriptionPlan`, through the real `stripe` SDK
 * against the emulator, on two Tollgate instances sharing one database: the change is made through A,
 * and B's entitlement checks follow on the very next request.
 */
let a: TestServer;
let b: TestServer;
let appId: string;
let apiKey: string;
let billing: BillingFixtures;
let basic: Awaited<ReturnType<BillingFixtures['plan']>>;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer(), startTestServer()]);
  ({ appId, apiKey } = await a.createApp({ organizationsEnabled: true }));
  billing = new BillingFixtures(a, appId);
  basic = await billing.plan({ slug: 'basic', unitAmount: 1000, features: { sso: false, seats: 1 } });
  pro = await billing.plan({ slug: 'pro', unitAmount: 3000, features: { sso: true, seats: 10 } });
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

async function subscribedTo(plan: typeof basic, options: { trialDays?: number } = {}) {
  const customer = await billing.customer();
  const subscription = await billing.subscription(
    { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
    plan,
    options,
  );
  return { customer, ...subscription };
}

const changePlan = (server: TestServer, id: string, token: string, body: object) =>
  server.http.post(`/v1/subscriptions/${id}/change-plan`).set('authorization', `Bearer ${token}`).send(body);

const sso = async (server: TestServer, customerId: string) => {
  const res = await server.http
    .get(`/v1/entitlements/check/sso?customerId=${customerId}`)
    .set('authorization', `Bearer ${apiKey}`);
  expect(res.status).toBe(200);
  return res.body.value as boolean;
};

/** Every notification the emulator of A has to send, delivered (or given up). */
const settled = () =>
  eventually(() => (a.payments.emulator!.pendingDeliveries === 0 ? true : undefined), {
    what: 'the emulator to deliver every notification',
  });

describe('POST /v1/subscriptions/:id/change-plan', () => {
  it('upgrades and downgrades at Stripe, and entitlements follow at once on both instances', async () => {
    const { customer, id, stripeSubscriptionId } = await subscribedTo(basic);
    await settled();
    // Both instances have the customer's entitlements cached before the change.
    expect(await sso(a, customer.id)).toBe(false);
    expect(await sso(b, customer.id)).toBe(false);

    const up = await changePlan(a, id, apiKey, { planId: 'pro' });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({
      id,
      customerId: customer.id,
      organizationId: null,
      plan: { id: 'pro', name: 'PRO' },
      status: 'active',
      cancelAtPeriodEnd: false,
    });
    const atStripe = await billing.stripe.subscriptions.retrieve(stripeSubscriptionId);
    expect(atStripe.items.data).toHaveLength(1);
    expect(atStripe.items.data[0]!.price.id).toBe(pro.price.id);
    expect(await sso(b, customer.id)).toBe(true);
    expect(await sso(a, customer.id)).toBe(true);

    // A customer session may change its own subscription; this time, back down.
    const token = await billing.session(customer.id);
    const down = await changePlan(a, id, token, { planId: 'basic', prorationBehavior: 'none' });
    expect(down.status).toBe(200);
    expect(down.body.plan).toEqual({ id: 'basic', name: 'BASIC' });
    expect((await billing.stripe.subscriptions.retrieve(stripeSubscriptionId)).items.data[0]!.price.id).toBe(
      basic.price.id,
    );
    expect(await sso(b, customer.id)).toBe(false);
    expect(await sso(a, customer.id)).toBe(false);

    // The notifications Stripe sends about both changes arrive later; none rolls the plan back.
    await settled();
    const updates = a.payments.emulator!.events.filter(
      (e) => e.type === 'customer.subscription.updated' && e.data.object.id === stripeSubscriptionId,
    );
    expect(updates.map((e) => e.data.object.items.data[0].price.id)).toEqual([pro.price.id, basic.price.id]);
    const stored = await billing.stored(id);
    expect(stored.plan.slug).toBe('basic');
    expect(stored.status).toBe('active');
    expect(await sso(b, customer.id)).toBe(false);
  });

  it('bills the difference at once with always_invoice, and not at all with none', async () => {
    const invoiced = await subscribedTo(basic);
    const quiet = await subscribedTo(basic);
    const invoices = async (stripeSubscriptionId: string) =>
      (await billing.stripe.invoices.list({ subscription: stripeSubscriptionId })).data;
    expect(await invoices(invoiced.stripeSubscriptionId)).toHaveLength(1);

    expect(
      (await changePlan(a, invoiced.id, apiKey, { planId: 'pro', prorationBehavior: 'always_invoice' }))
        .status,
    ).toBe(200);
    const after = await invoices(invoiced.stripeSubscriptionId);
    expect(after).toHaveLength(2);
    expect(after[0]!.billing_reason).toBe('subscription_update');
    // Two dollars a month more for (almost) the whole month just started.
    expect(after[0]!.amount_paid).toBeGreaterThan(1990);
    expect(after[0]!.amount_paid).toBeLessThanOrEqual(2000);

    expect((await changePlan(a, quiet.id, apiKey, { planId: 'pro', prorationBehavior: 'none' })).status).toBe(
      200,
    );
    expect(await invoices(quiet.stripeSubscriptionId)).toHaveLength(1);
  });

  it('refuses what cannot apply: unknown or unpriced plan 400, same plan 409, canceled 409', async () => {
    const { id } = await subscribedTo(basic);
    await withContext(a.deps.orm, async () => {
      await a.services.plans.upsertPlan({ kind: 'admin' }, appId, { id: 'free', name: 'Free' });
    });

    const unknown = await changePlan(a, id, apiKey, { planId: 'platinum' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: 'planId: the app has no plan "platinum"',
    });
    const unpriced = await changePlan(a, id, apiKey, { planId: 'free' });
    expect(unpriced.status).toBe(400);
    expect(unpriced.body.message).toBe('planId: plan "free" has no Stripe price to subscribe to');
    expect((await changePlan(a, id, apiKey, {})).body.message).toBe('planId: is required');
    const behavior = await changePlan(a, id, apiKey, { planId: 'pro', prorationBehavior: 'sometimes' });
    expect(behavior.status).toBe(400);
    expect(behavior.body.message).toMatch(/^prorationBehavior: /);
    const extra = await changePlan(a, id, apiKey, { planId: 'pro', quantity: 2 });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toBe('unknown field: quantity');

    const same = await changePlan(a, id, apiKey, { planId: 'basic' });
    expect(same.status).toBe(409);
    expect(same.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      message: 'The subscription is already on plan "basic"',
    });

    const canceled = await a.http
      .post(`/v1/subscriptions/${id}/cancel`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(canceled.status).toBe(200);
    const late = await changePlan(a, id, apiKey, { planId: 'pro' });
    expect(late.status).toBe(409);
    expect(late.body.message).toBe('The subscription is canceled: its plan can no longer be changed');
    // Nothing was changed at Stripe by the refused attempts.
    expect((await billing.stored(id)).plan.slug).toBe('basic');
  });

  it('follows the lifecycle credential rules: other customer 404, another app 404, org member 403', async () => {
    const { id } = await subscribedTo(basic);
    const stranger = await billing.customer();
    const strangerToken = await billing.session(stranger.id);
    const other = await changePlan(a, id, strangerToken, { planId: 'pro' });
    expect(other.status).toBe(404);
    expect(other.body.message).toBe(`Subscription ${id} not found`);

    const otherApp = await a.createApp();
    expect((await changePlan(a, id, otherApp.apiKey, { planId: 'pro' })).status).toBe(400);
    // The other app has the plan too: the subscription itself is what it cannot see.
    await withContext(a.deps.orm, () =>
      a.services.plans.upsertPlan({ kind: 'admin' }, otherApp.appId, {
        id: 'pro',
        name: 'Pro',
        stripePriceId: pro.price.id,
      }),
    );
    expect((await changePlan(a, id, otherApp.apiKey, { planId: 'pro' })).status).toBe(404);

    const owner = await billing.customer();
    const member = await billing.customer();
    const organizationId = await billing.organization([
      { customerId: owner.id, role: 'owner' },
      { customerId: member.id, role: 'member' },
    ]);
    const orgSubscription = await billing.subscription(
      { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId!, organizationId },
      basic,
    );
    const memberToken = await billing.session(member.id, organizationId);
    const forbidden = await changePlan(a, orgSubscription.id, memberToken, { planId: 'pro' });
    expect(forbidden.status).toBe(403);
    const ownerToken = await billing.session(owner.id, organizationId);
    const allowed = await changePlan(a, orgSubscription.id, ownerToken, { planId: 'pro' });
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ organizationId, customerId: null, plan: { id: 'pro' } });
    expect((await changePlan(a, id, 'tg_sk_nonsense', { planId: 'pro' })).status).toBe(401);
  });

  it('makes one change for concurrent identical requests and leaves one plan in place', async () => {
    const { id, stripeSubscriptionId } = await subscribedTo(basic);
    const answers = await Promise.all([1, 2, 3, 4].map(() => changePlan(a, id, apiKey, { planId: 'pro' })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    const updates = a.payments.emulator!.events.filter(
      (e) => e.type === 'customer.subscription.updated' && e.data.object.id === stripeSubscriptionId,
    );
    expect(updates).toHaveLength(1);
    const rows = await withContext(a.deps.orm, () =>
      a.deps.orm.em.find(Subscription, { stripeSubscriptionId }, { populate: ['plan'] }),
    );
    expect(rows.map((r) => r.plan.slug)).toEqual(['pro']);
  });
});

describe('POST /v1/subscriptions/:id/change-plan/preview', () => {
  it("answers the proration from Stripe's invoice preview and changes nothing", async () => {
    const { id, stripeSubscriptionId } = await subscribedTo(basic);
    const preview = (body: object) =>
      a.http
        .post(`/v1/subscriptions/${id}/change-plan/preview`)
        .set('authorization', `Bearer ${apiKey}`)
        .send(body);
    const up = await preview({ planId: 'pro' });
    expect(up.status).toBe(200);
    expect(up.body).toEqual({
      planId: 'pro',
      prorationBehavior: 'create_prorations',
      amount: expect.any(Number),
      currency: 'usd',
    });
    expect(up.body.amount).toBeGreaterThan(1990);
    expect(up.body.amount).toBeLessThanOrEqual(2000);
    expect((await preview({ planId: 'pro', prorationBehavior: 'none' })).body.amount).toBe(0);
    expect((await preview({ planId: 'basic' })).status).toBe(409);
    expect((await billing.stripe.subscriptions.retrieve(stripeSubscriptionId)).items.data[0]!.price.id).toBe(
      basic.price.id,
    );
    expect((await billing.stored(id)).plan.slug).toBe('basic');

    // A downgrade is a credit.
    expect((await changePlan(a, id, apiKey, { planId: 'pro' })).status).toBe(200);
    const down = await preview({ planId: 'basic' });
    expect(down.body.amount).toBeLessThan(-1990);
  });
});

describe('GraphQL changeSubscriptionPlan', () => {
  it('changes the plan over the same core, and refuses alike', async () => {
    const { customer, id } = await subscribedTo(basic);
    const token = await billing.session(customer.id);
    const preview = await a.op(PreviewSubscriptionPlanChangeDocument, { id, planId: 'pro' }, token);
    expect(preview.body.errors).toBeUndefined();
    expect(preview.body.data?.previewSubscriptionPlanChange).toMatchObject({
      planId: 'pro',
      prorationBehavior: 'create_prorations',
      currency: 'usd',
    });
    const changed = await a.op(
      ChangeSubscriptionPlanDocument,
      { id, planId: 'pro', prorationBehavior: 'none' },
      token,
    );
    expect(changed.body.errors).toBeUndefined();
    expect(changed.body.data?.changeSubscriptionPlan).toMatchObject({
      id,
      customerId: customer.id,
      plan: { id: 'pro', name: 'PRO' },
      status: 'active',
    });
    expect(await sso(b, customer.id)).toBe(true);
    const same = await a.op(ChangeSubscriptionPlanDocument, { id, planId: 'pro' }, token);
    expect(same.body.errors?.[0]).toMatchObject({
      message: 'The subscription is already on plan "pro"',
      extensions: { code: 'CONFLICT', statusCode: 409 },
    });
  });
});

describe('a subscription of several items', () => {
  it("changes the plan's item, found by its price, and leaves the other items alone", async () => {
    const { id, stripeSubscriptionId } = await subscribedTo(basic);
    const stripe = billing.stripe;
    const addonProduct = await stripe.products.create({ name: 'Add-on' });
    const addon = await stripe.prices.create({
      product: addonProduct.id,
      currency: 'usd',
      unit_amount: 700,
      recurring: { interval: 'month' },
    });
    // The plan's item last: [add-on, plan], so the first item is not the plan's.
    const withAddon = await stripe.subscriptions.update(stripeSubscriptionId, {
      items: [{ price: addon.id }],
      proration_behavior: 'none',
    });
    const planItem = withAddon.items.data.find((i) => i.price.id === basic.price.id)!;
    const reordered = await stripe.subscriptions.update(stripeSubscriptionId, {
      items: [{ id: planItem.id, deleted: true }, { price: basic.price.id }],
      proration_behavior: 'none',
    });
    expect(reordered.items.data.map((i) => i.price.id)).toEqual([addon.id, basic.price.id]);
    await settled();
    expect((await billing.stored(id)).plan.slug).toBe('basic');

    const preview = await a.http
      .post(`/v1/subscriptions/${id}/change-plan/preview`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ planId: 'pro' });
    expect(preview.status).toBe(200);
    // The plan's item moves from 10.00 to 30.00 for (almost) the whole month; the add-on is not prorated.
    expect(preview.body.amount).toBeGreaterThan(1990);
    expect(preview.body.amount).toBeLessThanOrEqual(2000);

    const changed = await changePlan(a, id, apiKey, { planId: 'pro' });
    expect(changed.status).toBe(200);
    expect(changed.body.plan.id).toBe('pro');
    const remote = await stripe.subscriptions.retrieve(stripeSubscriptionId);
    expect(remote.items.data.map((i) => i.price.id)).toEqual([addon.id, pro.price.id]);
    await settled();
    expect((await billing.stored(id)).plan.slug).toBe('pro');
  });
});
