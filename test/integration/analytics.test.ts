import type Stripe from 'stripe';
import { AnalyticsFixtures, day, RANGE } from '../helpers/analytics-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { expectOpenApiResponse } from '../helpers/openapi.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { payOnHostedPage, sessionTokenFor } from '../helpers/stripe-fixtures.js';

/**
 * The MRR ledger and `GET /v1/analytics` / `analytics`, end to end: subscriptions bought through
 * Tollgate's checkout on the emulator's hosted page (real `stripe` SDK, real notifications), changed
 * through the API and at Stripe, each movement recorded with its change and read back exactly.
 */

let server: TestServer;
let stripe: Stripe;

beforeAll(async () => {
  server = await startTestServer();
  fx = new AnalyticsFixtures(server);
  stripe = fx.stripe;
});
afterAll(async () => {
  await server.close();
});

let fx: AnalyticsFixtures;
const plan = (...args: Parameters<AnalyticsFixtures['plan']>) => fx.plan(...args);
const customer = (apiKey: string) => fx.customer(apiKey);
const subscribe = (...args: Parameters<AnalyticsFixtures['subscribe']>) => fx.subscribe(...args);
const movements = (appId: string) => fx.movements(appId);
const analytics = (apiKey: string, query: Record<string, string>) => fx.analytics(apiKey, query);
const settled = () => fx.settled();

const lifecycle = (apiKey: string, id: string, action: string, body: object = {}) =>
  server.http.post(`/v1/subscriptions/${id}/${action}`).set('authorization', `Bearer ${apiKey}`).send(body);

/** The purchase is recorded by whichever of its notifications arrives first: the checkout's or the subscription's. */
const BOUGHT = expect.stringMatching(/^(checkout|notification)$/);

const NO_MOVEMENTS = {
  newMrr: 0,
  expansionMrr: 0,
  contractionMrr: 0,
  churnedMrr: 0,
  reactivationMrr: 0,
  newSubscriptions: 0,
  canceledSubscriptions: 0,
  trialConversions: 0,
};

describe('the MRR ledger', () => {
  it('takes one customer through new → expansion → contraction → churn → reactivation, each movement exact', async () => {
    const { appId, apiKey } = await server.createApp();
    await plan(appId, 'basic', { unitAmount: 1_000 });
    await plan(appId, 'pro', { unitAmount: 3_000 });
    const buyer = await customer(apiKey);
    const { id } = await subscribe(apiKey, buyer, 'basic');

    expect((await lifecycle(apiKey, id, 'change-plan', { planId: 'pro' })).status).toBe(200);
    expect((await lifecycle(apiKey, id, 'change-plan', { planId: 'basic' })).status).toBe(200);
    expect((await lifecycle(apiKey, id, 'pause')).status).toBe(200);
    expect((await lifecycle(apiKey, id, 'resume')).status).toBe(200);
    await settled();

    expect(await movements(appId)).toEqual([
      { kind: 'new', cause: BOUGHT, before: 0, after: 1_000 },
      { kind: 'expansion', cause: 'plan_change', before: 1_000, after: 3_000 },
      { kind: 'contraction', cause: 'plan_change', before: 3_000, after: 1_000 },
      { kind: 'churn', cause: 'pause', before: 1_000, after: 0 },
      { kind: 'reactivation', cause: 'resume', before: 0, after: 1_000 },
    ]);

    const res = await analytics(apiKey, { ...RANGE(), interval: 'day' });
    expect(res.status).toBe(200);
    expectOpenApiResponse(res);
    expect(res.body.currency).toBe('usd');
    expect(res.body.interval).toBe('day');
    expect(res.body.periods.map((p: { start: string }) => p.start)).toEqual([day(-1), day(0), day(1)]);
    expect(res.body.periods[0]).toEqual({
      start: day(-1),
      mrr: 0,
      activeSubscriptions: 0,
      trialingSubscriptions: 0,
      ...NO_MOVEMENTS,
    });
    expect(res.body.periods[2]).toEqual({
      start: day(1),
      mrr: 1_000,
      activeSubscriptions: 1,
      trialingSubscriptions: 0,
      ...NO_MOVEMENTS,
    });
    expect(res.body.totals).toEqual({
      newMrr: 1_000,
      expansionMrr: 2_000,
      contractionMrr: 2_000,
      churnedMrr: 1_000,
      reactivationMrr: 1_000,
      newSubscriptions: 1,
      canceledSubscriptions: 0,
      trialConversions: 0,
    });
    expect(res.body.byPlan).toEqual([{ planId: 'basic', mrr: 1_000, activeSubscriptions: 1 }]);
    expect(Object.keys(res.body.definitions)).toEqual(
      expect.arrayContaining(['mrr', 'newMrr', 'churnedMrr']),
    );
  });

  it('records a same-day subscribe and pause as two movements, never netted', async () => {
    const { appId, apiKey } = await server.createApp();
    await plan(appId, 'basic', { unitAmount: 2_500 });
    const { id } = await subscribe(apiKey, await customer(apiKey), 'basic');
    expect((await lifecycle(apiKey, id, 'pause')).status).toBe(200);
    await settled();

    expect(await movements(appId)).toEqual([
      { kind: 'new', cause: BOUGHT, before: 0, after: 2_500 },
      { kind: 'churn', cause: 'pause', before: 2_500, after: 0 },
    ]);
    const res = await analytics(apiKey, RANGE());
    expect(res.status).toBe(200);
    expect(res.body.totals).toEqual({
      ...NO_MOVEMENTS,
      newMrr: 2_500,
      churnedMrr: 2_500,
      newSubscriptions: 1,
    });
    expect(res.body.periods.at(-1)).toMatchObject({ mrr: 0, activeSubscriptions: 0 });
  });

  it('counts a trial outside MRR until it converts, then as new MRR and a trial conversion', async () => {
    const { appId, apiKey } = await server.createApp();
    await plan(appId, 'trial', { unitAmount: 4_000, trialDays: 14 });
    const { stripeSubscriptionId } = await subscribe(apiKey, await customer(apiKey), 'trial');

    let res = await analytics(apiKey, RANGE());
    expect(res.body.periods.at(-1)).toMatchObject({
      mrr: 0,
      activeSubscriptions: 0,
      trialingSubscriptions: 1,
    });
    expect(res.body.totals).toEqual({ ...NO_MOVEMENTS, newSubscriptions: 1 });

    // The trial ends at Stripe; its notification brings the subscription into MRR.
    await stripe.subscriptions.update(stripeSubscriptionId, { trial_end: 'now' });
    await eventually(async () => ((await movements(appId)).length === 2 ? true : undefined), {
      what: 'the conversion to be recorded',
    });
    await settled();

    expect(await movements(appId)).toEqual([
      { kind: null, cause: BOUGHT, before: 0, after: 0 },
      { kind: 'new', cause: 'notification', before: 0, after: 4_000, converted: true },
    ]);
    res = await analytics(apiKey, RANGE());
    expect(res.body.periods.at(-1)).toMatchObject({
      mrr: 4_000,
      activeSubscriptions: 1,
      trialingSubscriptions: 0,
    });
    expect(res.body.totals).toEqual({
      ...NO_MOVEMENTS,
      newMrr: 4_000,
      newSubscriptions: 1,
      trialConversions: 1,
    });
  });

  it('normalises yearly and weekly prices, and follows a quantity change made at Stripe', async () => {
    const { appId, apiKey } = await server.createApp({ allowMultipleSubscriptions: true });
    await plan(appId, 'yearly', { unitAmount: 12_000, interval: 'year' });
    await plan(appId, 'weekly', { unitAmount: 1_000, interval: 'week' });
    const buyer = await customer(apiKey);
    const yearly = await subscribe(apiKey, buyer, 'yearly');
    await subscribe(apiKey, await customer(apiKey), 'weekly');

    const remote = await stripe.subscriptions.retrieve(yearly.stripeSubscriptionId);
    await stripe.subscriptions.update(yearly.stripeSubscriptionId, {
      items: [{ id: remote.items.data[0]!.id, quantity: 3 }],
    });
    await eventually(async () => ((await movements(appId)).length === 3 ? true : undefined), {
      what: 'the quantity change to be recorded',
    });
    await settled();

    expect(await movements(appId)).toEqual([
      { kind: 'new', cause: BOUGHT, before: 0, after: 1_000 },
      { kind: 'new', cause: BOUGHT, before: 0, after: 4_333 },
      { kind: 'expansion', cause: 'notification', before: 1_000, after: 3_000 },
    ]);
    const res = await analytics(apiKey, RANGE());
    expect(res.body.periods.at(-1)).toMatchObject({ mrr: 7_333, activeSubscriptions: 2 });
    expect(res.body.byPlan).toEqual([
      { planId: 'weekly', mrr: 4_333, activeSubscriptions: 1 },
      { planId: 'yearly', mrr: 3_000, activeSubscriptions: 1 },
    ]);
  });

  it('lets a forever coupon reduce MRR and a repeating one not', async () => {
    const { appId, apiKey } = await server.createApp();
    const { productId } = await plan(appId, 'pro', { unitAmount: 5_000 });
    const code = async (duration: 'forever' | 'repeating', text: string) => {
      const coupon = await stripe.coupons.create({
        percent_off: 40,
        duration,
        ...(duration === 'repeating' ? { duration_in_months: 3 } : {}),
        applies_to: { products: [productId] },
      });
      await stripe.promotionCodes.create({ promotion: { type: 'coupon', coupon: coupon.id }, code: text });
    };
    const suffix = Math.random().toString(36).slice(2, 8).toUpperCase();
    await code('forever', `FOREVER${suffix}`);
    await code('repeating', `REPEAT${suffix}`);
    await subscribe(apiKey, await customer(apiKey), 'pro', { couponCode: `FOREVER${suffix}` });
    await subscribe(apiKey, await customer(apiKey), 'pro', { couponCode: `REPEAT${suffix}` });

    expect(await movements(appId)).toEqual([
      { kind: 'new', cause: BOUGHT, before: 0, after: 3_000 },
      { kind: 'new', cause: BOUGHT, before: 0, after: 5_000 },
    ]);
  });

  it('counts a cancellation as churn and a canceled subscription', async () => {
    const { appId, apiKey } = await server.createApp();
    await plan(appId, 'basic', { unitAmount: 1_500 });
    const { id } = await subscribe(apiKey, await customer(apiKey), 'basic');
    expect((await lifecycle(apiKey, id, 'cancel')).status).toBe(200);
    await settled();
    expect(await movements(appId)).toEqual([
      { kind: 'new', cause: BOUGHT, before: 0, after: 1_500 },
      { kind: 'churn', cause: 'cancel', before: 1_500, after: 0 },
    ]);
    const res = await analytics(apiKey, RANGE());
    expect(res.body.totals).toEqual({
      ...NO_MOVEMENTS,
      newMrr: 1_500,
      churnedMrr: 1_500,
      newSubscriptions: 1,
      canceledSubscriptions: 1,
    });
  });
});

describe('the MRR ledger for organizations', () => {
  it("records an organization's subscription as the organization's movements, not its owner's", async () => {
    const { appId, apiKey } = await server.createApp({ organizationsEnabled: true });
    await plan(appId, 'team', { unitAmount: 5_000 });
    const owner = await customer(apiKey);
    const created = await server.graphql(
      'mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { id } }',
      { input: { name: 'Acme', ownerCustomerId: owner } },
      apiKey,
    );
    expect(created.body.errors).toBeUndefined();
    const organizationId = created.body.data.createOrganization.id;
    const res = await server.http.post('/v1/checkout/session').set('authorization', `Bearer ${apiKey}`).send({
      organizationId,
      planId: 'team',
      successUrl: 'https://shop.example.com/ok',
      cancelUrl: 'https://shop.example.com/cancel',
    });
    expect(res.status).toBe(200);
    expect((await payOnHostedPage(res.body.url)).status).toBe(303);
    await eventually(async () => ((await movements(appId)).length === 1 ? true : undefined), {
      what: "the organization's subscription to be recorded",
    });
    await settled();
    const rows = await fx.sql<{
      subject_id: string;
      customer_id: string | null;
      organization_id: string | null;
    }>('select subject_id, customer_id, organization_id from mrr_movement where app_id = ?', [appId]);
    expect(rows).toEqual([
      { subject_id: organizationId, customer_id: null, organization_id: organizationId },
    ]);
    expect(await movements(appId)).toEqual([{ kind: 'new', cause: BOUGHT, before: 0, after: 5_000 }]);
  });
});

describe('GET /v1/analytics', () => {
  it('answers zeros for an app without subscriptions, one period per month', async () => {
    const { apiKey } = await server.createApp();
    const res = await analytics(apiKey, { from: '2026-01-15', to: '2026-03-02' });
    expect(res.status).toBe(200);
    expectOpenApiResponse(res);
    const empty = { mrr: 0, activeSubscriptions: 0, trialingSubscriptions: 0, ...NO_MOVEMENTS };
    expect(res.body).toEqual({
      currency: null,
      interval: 'month',
      periods: [
        { start: '2026-01-15', ...empty },
        { start: '2026-02-01', ...empty },
        { start: '2026-03-01', ...empty },
      ],
      totals: NO_MOVEMENTS,
      byPlan: [],
      definitions: expect.any(Object),
    });
  });

  it('cuts weeks at Mondays', async () => {
    const { apiKey } = await server.createApp();
    const res = await analytics(apiKey, { from: '2026-06-03', to: '2026-06-16', interval: 'week' });
    expect(res.status).toBe(200);
    expect(res.body.periods.map((p: { start: string }) => p.start)).toEqual([
      '2026-06-03',
      '2026-06-08',
      '2026-06-15',
    ]);
  });

  it('asks for the currency when the app has MRR in several, and reports each on its own', async () => {
    const { appId, apiKey } = await server.createApp({ allowMultipleSubscriptions: true });
    await plan(appId, 'usd', { unitAmount: 1_000 });
    await plan(appId, 'eur', { unitAmount: 900, currency: 'eur' });
    await subscribe(apiKey, await customer(apiKey), 'usd');
    await subscribe(apiKey, await customer(apiKey), 'eur');

    const without = await analytics(apiKey, RANGE());
    expect(without.status).toBe(400);
    expect(without.body).toEqual({
      statusCode: 400,
      message: 'currency: required when the app has MRR in several currencies (eur, usd)',
      error: 'Bad Request',
    });
    const eur = await analytics(apiKey, { ...RANGE(), currency: 'EUR' });
    expect(eur.status).toBe(200);
    expect(eur.body.currency).toBe('eur');
    expect(eur.body.periods.at(-1)).toMatchObject({ mrr: 900, activeSubscriptions: 1 });
    expect(eur.body.byPlan).toEqual([{ planId: 'eur', mrr: 900, activeSubscriptions: 1 }]);
  });

  it('never shows another app its figures', async () => {
    const owner = await server.createApp();
    await plan(owner.appId, 'basic', { unitAmount: 1_000 });
    await subscribe(owner.apiKey, await customer(owner.apiKey), 'basic');
    const other = await server.createApp();
    const res = await analytics(other.apiKey, RANGE());
    expect(res.status).toBe(200);
    expect(res.body.currency).toBeNull();
    expect(res.body.totals).toEqual(NO_MOVEMENTS);
    expect(res.body.byPlan).toEqual([]);
  });

  it.each([
    [{ from: '2026-02-30', to: '2026-03-01' }, 'from: must be a date that exists'],
    [{ from: '2026-03-02', to: '2026-03-01' }, 'from: must not be after to'],
    [
      { from: '2026-03-01', to: '2026-03-02', interval: 'hour' },
      'interval: Invalid option: expected one of "day"|"week"|"month"',
    ],
    [
      { from: '2016-01-01', to: '2026-01-01', interval: 'day' },
      'interval: gives more than 1200 periods for this range',
    ],
  ])('refuses %j with 400', async (query, message) => {
    const { apiKey } = await server.createApp();
    const res = await analytics(apiKey, query as Record<string, string>);
    expect(res.status).toBe(400);
    expectOpenApiResponse(res);
    expect(res.body).toEqual({ statusCode: 400, message, error: 'Bad Request' });
  });

  it('takes an API key only: none → 401, a session → 403', async () => {
    const { appId, apiKey } = await server.createApp();
    const anonymous = await server.http.get('/v1/analytics').query(RANGE());
    expect(anonymous.status).toBe(401);
    const token = await sessionTokenFor(server, appId, await customer(apiKey));
    const session = await server.http
      .get('/v1/analytics')
      .query(RANGE())
      .set('authorization', `Bearer ${token}`);
    expect(session.status).toBe(403);
    expect(session.body.statusCode).toBe(403);
  });

  it('answers the same over GraphQL with the admin token naming the app', async () => {
    const { appId, apiKey } = await server.createApp();
    await plan(appId, 'basic', { unitAmount: 1_000 });
    await subscribe(apiKey, await customer(apiKey), 'basic');
    const rest = await analytics(apiKey, { ...RANGE(), interval: 'day' });
    const gql = await server.graphql(
      `query($appId: ID!, $from: String!, $to: String!) {
        analytics(appId: $appId, from: $from, to: $to, interval: "day") {
          currency interval
          periods { start mrr activeSubscriptions trialingSubscriptions newMrr expansionMrr contractionMrr churnedMrr
                    reactivationMrr newSubscriptions canceledSubscriptions trialConversions }
          totals { newMrr expansionMrr contractionMrr churnedMrr reactivationMrr newSubscriptions canceledSubscriptions trialConversions }
          byPlan { planId mrr activeSubscriptions }
          definitions
        }
      }`,
      { appId, ...RANGE() },
      server.adminToken,
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.analytics).toEqual(rest.body);
    const missing = await server.graphql(
      'query($from: String!, $to: String!) { analytics(from: $from, to: $to) { currency } }',
      RANGE(),
      server.adminToken,
    );
    expect(missing.body.errors?.[0]?.extensions?.statusCode).toBe(400);
  });
});
