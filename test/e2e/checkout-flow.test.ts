import type Stripe from 'stripe';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, sessionTokenFor, stripeFor } from '../helpers/stripe-fixtures.js';

/**
 * The whole checkout as an app and its customer live it: Tollgate creates the checkout, the customer
 * follows the URL to the (emulated) hosted page and pays, Stripe redirects to the success URL with the
 * real session id, and the subscription appears once Stripe's signed notification has been applied.
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

const DAY_MS = 86_400_000;
const SUCCESS = 'https://shop.example.com/thanks?session={CHECKOUT_SESSION_ID}';
const CANCEL = 'https://shop.example.com/pricing';

async function createCustomer(apiKey: string, email: string): Promise<{ id: string }> {
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email });
  expect(res.status).toBe(201);
  return res.body;
}

async function checkout(apiKey: string, body: Record<string, unknown>): Promise<string> {
  const res = await server.http
    .post('/v1/checkout/session')
    .set('authorization', `Bearer ${apiKey}`)
    .send(body);
  expect(res.status).toBe(200);
  expect(Object.keys(res.body)).toEqual(['url']);
  return res.body.url;
}

/** Pays on the hosted page and checks the redirect to the success URL with the real session id. */
async function payAndLand(url: string, form: Record<string, string> = {}): Promise<string> {
  const paid = await payOnHostedPage(url, form);
  expect(paid.status).toBe(303);
  const sessionId = url.split('/').pop()!;
  expect(sessionId).toMatch(/^cs_test_/);
  expect(paid.headers.get('location')).toBe(`https://shop.example.com/thanks?session=${sessionId}`);
  return sessionId;
}

/** The success page must not assume the subscription exists yet: poll until the notification is applied. */
async function currentSubscription(apiKey: string, customerId: string) {
  return eventually(async () => {
    const res = await server.http
      .get('/v1/subscriptions/current')
      .query({ customerId })
      .set('authorization', `Bearer ${apiKey}`);
    if (res.status === 404) return undefined;
    expect(res.status).toBe(200);
    return res.body;
  });
}

describe('checkout end to end through the Stripe SDK and the hosted page', () => {
  it('subscribes an existing customer, with the checkout metadata on the subscription', async () => {
    const { appId, apiKey } = await server.createApp();
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', unitAmount: 2000 });
    const customer = await createCustomer(apiKey, 'existing@example.com');
    const metadata = { campaign: 'spring', seats: 3, nested: { trial: false }, note: 'é'.repeat(600) };

    const url = await checkout(apiKey, {
      planId: 'pro',
      customerId: customer.id,
      successUrl: SUCCESS,
      cancelUrl: CANCEL,
      metadata,
    });
    expect(url.startsWith(`${server.payments.apiBase}/checkout/cs_test_`)).toBe(true);

    // The customer got a Stripe customer on the way, and it is stored.
    const stored = await server.http
      .get(`/v1/customers/${customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(stored.body.paymentCustomerId).toMatch(/^cus_/);
    const stripeCustomer = (await stripe.customers.retrieve(
      stored.body.paymentCustomerId,
    )) as Stripe.Customer;
    expect(stripeCustomer.email).toBe('existing@example.com');

    const page = await (await fetch(url)).text();
    expect(page).toContain(`<a id="cancel" href="${CANCEL}">`);

    const sessionId = await payAndLand(url);
    const subscription = await currentSubscription(apiKey, customer.id);
    const before = Date.now();
    expect(subscription).toMatchObject({
      customerId: customer.id,
      organizationId: null,
      plan: { id: 'pro', name: 'Pro' },
      status: 'active',
      cancelAtPeriodEnd: false,
      trialEnd: null,
      canceledAt: null,
      metadata,
    });
    expect(subscription.id).toMatch(/^sub_/);
    const periodEnd = Date.parse(subscription.currentPeriodEnd);
    expect(periodEnd).toBeGreaterThan(before + 27 * DAY_MS);
    expect(periodEnd).toBeLessThan(before + 32 * DAY_MS);

    // At Stripe, the session and the subscription carry Tollgate's tracking metadata.
    const session = await stripe.checkout.sessions.retrieve(sessionId);
    expect(session.metadata).toEqual({
      tollgate_app_id: appId,
      tollgate_plan_id: 'pro',
      tollgate_customer_id: customer.id,
    });
    const remote = await stripe.subscriptions.retrieve(String(session.subscription));
    expect(remote.metadata).toMatchObject({
      tollgate_app_id: appId,
      tollgate_plan_id: 'pro',
      tollgate_customer_id: customer.id,
    });
    expect(remote.customer).toBe(stored.body.paymentCustomerId);
  });

  it('creates the customer of a checkout by e-mail when the checkout completes', async () => {
    const { appId, apiKey } = await server.createApp();
    await createPaidPlan(server, appId, { id: 'team', name: 'Team' });
    const url = await checkout(apiKey, {
      planId: 'team',
      email: 'New.Buyer@Example.com',
      successUrl: SUCCESS,
      cancelUrl: CANCEL,
      metadata: { source: 'landing' },
    });
    const list = await server.http
      .get('/v1/customers')
      .query({ email: 'new.buyer' })
      .set('authorization', `Bearer ${apiKey}`);
    expect(list.body.data).toEqual([]);

    const sessionId = await payAndLand(url, { name: 'New Buyer' });
    const created = await eventually(async () => {
      const res = await server.http
        .get('/v1/customers')
        .query({ email: 'new.buyer' })
        .set('authorization', `Bearer ${apiKey}`);
      return res.body.data.length === 1 ? res.body.data[0] : undefined;
    });
    const session = await stripe.checkout.sessions.retrieve(sessionId);
    expect(created).toMatchObject({
      email: 'New.Buyer@Example.com',
      name: 'New Buyer',
      paymentCustomerId: session.customer,
    });
    const subscription = await currentSubscription(apiKey, created.id);
    expect(subscription).toMatchObject({
      plan: { id: 'team', name: 'Team' },
      status: 'active',
      metadata: { source: 'landing' },
    });
  });

  it('applies a promotion code as a discount, and refuses unknown or expired codes with the reason', async () => {
    const { appId, apiKey } = await server.createApp();
    const { productId } = await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', unitAmount: 2000 });
    const coupon = await stripe.coupons.create({
      percent_off: 25,
      duration: 'once',
      applies_to: { products: [productId] },
    });
    const code = `SPRING${Date.now()}`;
    await stripe.promotionCodes.create({ promotion: { type: 'coupon', coupon: coupon.id }, code });
    const expiredCode = `OLD${Date.now()}`;
    await stripe.promotionCodes.create({
      promotion: { type: 'coupon', coupon: coupon.id },
      code: expiredCode,
      expires_at: Math.floor(Date.now() / 1000) - 60,
    });
    const customer = await createCustomer(apiKey, 'coupon@example.com');
    const base = { planId: 'pro', customerId: customer.id, successUrl: SUCCESS, cancelUrl: CANCEL };

    const unknown = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ ...base, couponCode: 'NOPE' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({
      statusCode: 400,
      message: 'couponCode: Coupon code not found',
      error: 'Bad Request',
    });
    const expired = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ ...base, couponCode: expiredCode });
    expect(expired.status).toBe(400);
    expect(expired.body.message).toBe('couponCode: Coupon expired');

    const url = await checkout(apiKey, { ...base, couponCode: code.toLowerCase() });
    expect(await (await fetch(url)).text()).toContain('15.00 USD / month');
    const sessionId = await payAndLand(url);
    const subscription = await currentSubscription(apiKey, customer.id);
    expect(subscription).toMatchObject({ status: 'active', plan: { id: 'pro' } });
    const session = await stripe.checkout.sessions.retrieve(sessionId);
    const invoices = await stripe.invoices.list({ customer: String(session.customer) });
    expect(invoices.data.map((i) => i.amount_paid)).toEqual([1500]);
  });

  it('starts the plan trial without a card when the app does not require one', async () => {
    const { appId, apiKey } = await server.createApp({ trialPaymentMethod: 'no_payment_method' });
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', trialDays: 14 });
    const customer = await createCustomer(apiKey, 'trial@example.com');
    const url = await checkout(apiKey, {
      planId: 'pro',
      customerId: customer.id,
      successUrl: SUCCESS,
      cancelUrl: CANCEL,
    });
    const page = await (await fetch(url)).text();
    expect(page).toContain('14-day free trial');
    expect(page).not.toContain('name="card_number"');

    const sessionId = await payAndLand(url);
    const subscription = await currentSubscription(apiKey, customer.id);
    expect(subscription.status).toBe('trialing');
    const trialEnd = Date.parse(subscription.trialEnd);
    expect(trialEnd).toBeGreaterThan(Date.now() + 13 * DAY_MS);
    expect(trialEnd).toBeLessThan(Date.now() + 15 * DAY_MS);
    expect(subscription.currentPeriodEnd).toBe(subscription.trialEnd);
    const remote = await stripe.subscriptions.retrieve(
      String((await stripe.checkout.sessions.retrieve(sessionId)).subscription),
    );
    expect(remote.default_payment_method).toBeNull();
  });

  it('asks for a card during the trial when the app requires a payment method', async () => {
    const { appId, apiKey } = await server.createApp({ trialPaymentMethod: 'require_payment_method' });
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', trialDays: 7 });
    const customer = await createCustomer(apiKey, 'trial-card@example.com');
    const url = await checkout(apiKey, {
      planId: 'pro',
      customerId: customer.id,
      successUrl: SUCCESS,
      cancelUrl: CANCEL,
    });
    expect(await (await fetch(url)).text()).toContain('name="card_number"');
    await payAndLand(url);
    expect((await currentSubscription(apiKey, customer.id)).status).toBe('trialing');
  });

  it('requires a billing address on the page when collectBillingAddress is true', async () => {
    const { appId, apiKey } = await server.createApp();
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro' });
    const customer = await createCustomer(apiKey, 'address@example.com');
    const url = await checkout(apiKey, {
      planId: 'pro',
      customerId: customer.id,
      successUrl: SUCCESS,
      cancelUrl: CANCEL,
      collectBillingAddress: true,
    });
    expect(await (await fetch(url)).text()).toContain('Billing address');
    const incomplete = await payOnHostedPage(url, { name: 'A Person' });
    expect(incomplete.status).toBe(400);

    const sessionId = await payAndLand(url, {
      name: 'A Person',
      address_line1: '1 Main Street',
      address_city: 'Springfield',
      address_postal_code: '12345',
      address_country: 'US',
    });
    const session = await stripe.checkout.sessions.retrieve(sessionId);
    expect(session.billing_address_collection).toBe('required');
    expect(session.customer_details?.address).toMatchObject({ line1: '1 Main Street', country: 'US' });
    expect((await currentSubscription(apiKey, customer.id)).status).toBe('active');
  });

  it('lets a customer session check itself out over GraphQL and read its subscription back', async () => {
    const { appId, apiKey } = await server.createApp({ allowedCallbackUrls: 'https://shop.example.com/*' });
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', features: { projects: 10 } });
    const customer = await createCustomer(apiKey, 'graphql@example.com');
    const token = await sessionTokenFor(server, appId, customer.id);

    const plans = await server.graphql('{ plans { id name trialDays isDefault features } }', {}, token);
    expect(plans.body).toEqual({
      data: {
        plans: [{ id: 'pro', name: 'Pro', trialDays: 0, isDefault: false, features: { projects: 10 } }],
      },
    });

    const created = await server.graphql(
      `mutation($input: CheckoutSessionInput!) { createCheckoutSession(input: $input) { url } }`,
      {
        input: {
          planId: 'pro',
          customerId: customer.id,
          successUrl: SUCCESS,
          cancelUrl: CANCEL,
          metadata: { via: 'graphql' },
        },
      },
      token,
    );
    expect(created.body.errors).toBeUndefined();
    await payAndLand(created.body.data.createCheckoutSession.url);

    const query = '{ currentSubscription { id status metadata plan { id name } } }';
    const found = await eventually(async () => {
      const res = await server.graphql(query, {}, token);
      return res.body.data?.currentSubscription ?? undefined;
    });
    expect(found).toMatchObject({
      status: 'active',
      metadata: { via: 'graphql' },
      plan: { id: 'pro', name: 'Pro' },
    });

    const rest = await server.http.get('/v1/subscriptions/current').set('authorization', `Bearer ${token}`);
    expect(rest.status).toBe(200);
    expect(rest.body.id).toBe(found.id);
  });
});
