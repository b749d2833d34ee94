import { randomBytes } from 'node:crypto';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const VALIDATE = `query($code: String!, $planId: ID!) { validateCoupon(code: $code, planId: $planId) { valid reason } }`;

const code = (label: string) => `${label}${randomBytes(3).toString('hex')}`.toUpperCase();

let server: TestServer;
let apiKey: string;
let billing: BillingFixtures;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;
let team: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp();
  apiKey = app.apiKey;
  billing = new BillingFixtures(server, app.appId);
  pro = await billing.plan({ slug: 'pro', unitAmount: 2000 });
  team = await billing.plan({ slug: 'team', unitAmount: 9000 });
});

afterAll(async () => {
  await server?.close();
});

async function validate(couponCode: string, planId: string, token = apiKey) {
  const res = await server.graphql(VALIDATE, { code: couponCode, planId }, token);
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
  return res.body.data.validateCoupon;
}

async function promotionCode(
  coupon: Parameters<BillingFixtures['stripe']['coupons']['create']>[0],
  promotion: Record<string, unknown> = {},
): Promise<{ id: string; code: string }> {
  const created = await billing.stripe.coupons.create(coupon);
  const text = code('SAVE');
  const result = await billing.stripe.promotionCodes.create({
    promotion: { type: 'coupon', coupon: created.id },
    code: text,
    ...promotion,
  });
  return { id: result.id, code: text };
}

describe('validateCoupon', () => {
  it('accepts a live promotion code for a plan, whatever the case of the code', async () => {
    const { code: text } = await promotionCode({ percent_off: 20 });
    expect(await validate(text, 'pro')).toEqual({ valid: true, reason: null });
    expect(await validate(text.toLowerCase(), 'pro')).toEqual({ valid: true, reason: null });
  });

  it('reports an unknown code', async () => {
    expect(await validate('NOSUCHCODE', 'pro')).toEqual({ valid: false, reason: 'Coupon code not found' });
  });

  it('reports an expired promotion code', async () => {
    const past = Math.floor(Date.now() / 1000) - 60;
    const { code: text } = await promotionCode({ percent_off: 10 }, { expires_at: past });
    expect(await validate(text, 'pro')).toEqual({ valid: false, reason: 'Coupon expired' });
  });

  it('reports a coupon past its redeem_by date as expired', async () => {
    const past = Math.floor(Date.now() / 1000) - 60;
    const { code: text } = await promotionCode({ percent_off: 10, redeem_by: past });
    expect(await validate(text, 'pro')).toEqual({ valid: false, reason: 'Coupon expired' });
  });

  it('reports a promotion code that reached its maximum redemptions as used up', async () => {
    const promo = await promotionCode({ percent_off: 10 }, { max_redemptions: 1 });
    expect(await validate(promo.code, 'pro')).toEqual({ valid: true, reason: null });
    const customer = await billing.customer();
    await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      pro,
      { promotionCodeId: promo.id },
    );
    expect(await validate(promo.code, 'pro')).toEqual({
      valid: false,
      reason: 'Coupon has reached its maximum number of redemptions',
    });
  });

  it('reports a coupon restricted to other products (applies_to) as not valid for this plan', async () => {
    const { code: text } = await promotionCode({
      percent_off: 10,
      applies_to: { products: [String(team.price.product)] },
    });
    expect(await validate(text, 'pro')).toEqual({
      valid: false,
      reason: 'Coupon is not valid for this plan',
    });
    expect(await validate(text, 'team')).toEqual({ valid: true, reason: null });
  });

  it('reports a promotion code whose minimum amount the plan does not reach as not valid for this plan', async () => {
    const { code: text } = await promotionCode(
      { percent_off: 10 },
      { restrictions: { minimum_amount: 5000, minimum_amount_currency: 'usd' } },
    );
    expect(await validate(text, 'pro')).toEqual({
      valid: false,
      reason: 'Coupon is not valid for this plan',
    });
    expect(await validate(text, 'team')).toEqual({ valid: true, reason: null });
  });

  it('reports a deactivated promotion code', async () => {
    const promo = await promotionCode({ percent_off: 10 });
    await billing.stripe.promotionCodes.update(promo.id, { active: false });
    expect(await validate(promo.code, 'pro')).toEqual({ valid: false, reason: 'Coupon is no longer active' });
  });

  it('answers a customer session like an API key', async () => {
    const { code: text } = await promotionCode({ percent_off: 10 });
    const customer = await billing.customer({ linked: false });
    const token = await billing.session(customer.id);
    expect(await validate(text, 'pro', token)).toEqual({ valid: true, reason: null });
  });

  it('answers 404 for a plan the app does not have, another app’s included', async () => {
    const other = await server.createApp();
    const otherBilling = new BillingFixtures(server, other.appId);
    await otherBilling.plan({ slug: 'enterprise' });
    const res = await server.graphql(VALIDATE, { code: 'ANY', planId: 'enterprise' }, apiKey);
    expect(res.body.data).toBeNull();
    expect(res.body.errors?.[0]).toMatchObject({
      message: 'Plan enterprise not found',
      extensions: { code: 'NOT_FOUND', statusCode: 404 },
    });
  });

  it('refuses an empty code and a request without credentials', async () => {
    const empty = await server.graphql(VALIDATE, { code: '  ', planId: 'pro' }, apiKey);
    expect(empty.body.errors?.[0]).toMatchObject({
      message: 'code: must not be empty',
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
    });
    const anonymous = await server.graphql(VALIDATE, { code: 'X', planId: 'pro' });
    expect(anonymous.body.errors?.[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED', statusCode: 401 });
  });
});
