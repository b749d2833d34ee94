import type Stripe from 'stripe';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, stripeFor } from '../helpers/stripe-fixtures.js';

/**
 * One live subscription per buyer: a second checkout answers 409 and names the plan change, and paying
 * one checkout expires the buyer's other open sessions; `allowMultipleSubscriptions` lifts both.
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

const URLS = { successUrl: 'https://shop.example.com/ok', cancelUrl: 'https://shop.example.com/cancel' };

async function newApp(settings: Record<string, unknown> = {}) {
  const app = await server.createApp({ organizationsEnabled: true, ...settings });
  await createPaidPlan(server, app.appId, { id: 'pro', name: 'Pro' });
  const fx = new Fixtures(server, app.appId);
  const basic = await fx.plan('basic', {});
  return { ...app, fx, basic };
}

async function newCustomer(apiKey: string, email: string): Promise<string> {
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email });
  expect(res.status).toBe(201);
  return res.body.id;
}

function checkout(apiKey: string, body: Record<string, unknown>) {
  return server.http
    .post('/v1/checkout/session')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ planId: 'pro', ...URLS, ...body });
}

const sessionIdOf = (url: string) => url.split('/').pop()!;

function conflict(message: string) {
  return { status: 409, body: { statusCode: 409, message, error: 'Conflict' } };
}

describe('a second checkout for a buyer with a live subscription', () => {
  it.each(['trialing', 'active', 'past_due', 'paused'] as const)(
    'answers 409 naming the plan change for a customer whose subscription is %s',
    async (status) => {
      const { apiKey, fx, basic } = await newApp();
      const customerId = await newCustomer(apiKey, `${status}@example.com`);
      const subscriptionId = await fx.subscription({ customerId }, basic, status);
      const res = await checkout(apiKey, { customerId });
      expect({ status: res.status, body: res.body }).toEqual(
        conflict(
          `Customer ${customerId} already has subscription ${subscriptionId}, which is ${status}: change its plan ` +
            `with POST /v1/subscriptions/:id/change-plan (id ${subscriptionId}) instead of starting another checkout`,
        ),
      );
    },
  );

  it('checks out a customer whose subscriptions have all ended', async () => {
    const { apiKey, fx, basic } = await newApp();
    const customerId = await newCustomer(apiKey, 'ended@example.com');
    await fx.subscription({ customerId }, basic, 'canceled');
    await fx.subscription({ customerId }, basic, 'incomplete_expired');
    const res = await checkout(apiKey, { customerId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: expect.stringContaining('/checkout/cs_test_') });
  });

  it('answers 409 for the e-mail of an existing customer with a live subscription', async () => {
    const { apiKey, fx, basic } = await newApp();
    const customerId = await newCustomer(apiKey, 'Known@Example.com');
    const subscriptionId = await fx.subscription({ customerId }, basic, 'active');
    const res = await checkout(apiKey, { email: 'known@example.com' });
    expect({ status: res.status, body: res.body }).toEqual(
      conflict(
        `The customer with this e-mail (${customerId}) already has subscription ${subscriptionId}, which is active: ` +
          `change its plan with POST /v1/subscriptions/:id/change-plan (id ${subscriptionId}) instead of starting another checkout`,
      ),
    );
  });

  it('answers 409 for an organization with a live subscription, not for its members on their own', async () => {
    const { apiKey, fx, basic } = await newApp();
    const owner = await newCustomer(apiKey, 'org-owner@example.com');
    const created = await server.graphql(
      'mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { id } }',
      { input: { name: 'Acme', ownerCustomerId: owner } },
      apiKey,
    );
    const organizationId = created.body.data.createOrganization.id;
    const subscriptionId = await fx.subscription({ organizationId }, basic, 'trialing');
    const res = await checkout(apiKey, { organizationId });
    expect({ status: res.status, body: res.body }).toEqual(
      conflict(
        `Organization ${organizationId} already has subscription ${subscriptionId}, which is trialing: change its plan ` +
          `with POST /v1/subscriptions/:id/change-plan (id ${subscriptionId}) instead of starting another checkout`,
      ),
    );
    expect((await checkout(apiKey, { customerId: owner })).status).toBe(200);
  });

  it('answers the same over GraphQL', async () => {
    const { apiKey, fx, basic } = await newApp();
    const customerId = await newCustomer(apiKey, 'graphql@example.com');
    const subscriptionId = await fx.subscription({ customerId }, basic, 'active');
    const res = await server.graphql(
      'mutation($input: CheckoutSessionInput!) { createCheckoutSession(input: $input) { url } }',
      { input: { planId: 'pro', customerId, ...URLS } },
      apiKey,
    );
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message: expect.stringContaining(
          `subscription ${subscriptionId}, which is active: change its plan with POST /v1/subscriptions/:id/change-plan`,
        ),
        extensions: { code: 'CONFLICT', statusCode: 409 },
      }),
    ]);
  });

  it('checks out again when the app allows several subscriptions (add-ons)', async () => {
    const { apiKey, fx, basic } = await newApp({ allowMultipleSubscriptions: true });
    const customerId = await newCustomer(apiKey, 'addons@example.com');
    await fx.subscription({ customerId }, basic, 'active');
    const res = await checkout(apiKey, { customerId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: expect.stringContaining('/checkout/cs_test_') });
  });
});

describe("completing a checkout expires the buyer's other open sessions", () => {
  async function status(sessionId: string) {
    return (await stripe.checkout.sessions.retrieve(sessionId)).status;
  }

  async function currentSubscription(apiKey: string, customerId: string) {
    return eventually(async () => {
      const res = await server.http
        .get('/v1/subscriptions/current')
        .query({ customerId })
        .set('authorization', `Bearer ${apiKey}`);
      return res.status === 200 ? res.body : undefined;
    });
  }

  it("expires a customer's other sessions, by id and by e-mail, and leaves other buyers' open", async () => {
    const { apiKey } = await newApp();
    const customerId = await newCustomer(apiKey, 'two-tabs@example.com');
    const bystander = await newCustomer(apiKey, 'bystander@example.com');
    const first = await checkout(apiKey, { customerId });
    const second = await checkout(apiKey, { customerId });
    const byEmail = await checkout(apiKey, { email: 'two-tabs@example.com' });
    const theirs = await checkout(apiKey, { customerId: bystander });
    for (const res of [first, second, byEmail, theirs]) expect(res.status).toBe(200);

    const paid = await payOnHostedPage(second.body.url);
    expect(paid.status).toBe(303);
    await currentSubscription(apiKey, customerId);
    // The subscription's own notification may import it before the completed checkout's is applied, and
    // the latter is the one that expires the buyer's other sessions: wait until it has.
    const others = [first, byEmail].map((res) => sessionIdOf(res.body.url));
    await eventually(
      async () => ((await Promise.all(others.map(status))).every((s) => s !== 'open') ? true : undefined),
      { what: "the buyer's other sessions to be no longer open" },
    );

    expect(await status(sessionIdOf(second.body.url))).toBe('complete');
    expect(await status(sessionIdOf(first.body.url))).toBe('expired');
    expect(await status(sessionIdOf(byEmail.body.url))).toBe('expired');
    expect(await status(sessionIdOf(theirs.body.url))).toBe('open');
    const page = await fetch(first.body.url);
    expect(await page.text()).toContain('This checkout session has expired.');
    // And now the customer holds a live subscription, a new checkout is refused.
    expect((await checkout(apiKey, { customerId })).status).toBe(409);
  });

  it("expires a new buyer's other sessions started with the same e-mail", async () => {
    const { apiKey } = await newApp();
    const one = await checkout(apiKey, { email: 'newcomer@example.com' });
    const other = await checkout(apiKey, { email: 'NewComer@example.com' });
    await payOnHostedPage(one.body.url, { email: 'newcomer@example.com' });
    await eventually(async () =>
      (await status(sessionIdOf(other.body.url))) === 'expired' ? true : undefined,
    );
    expect(await status(sessionIdOf(one.body.url))).toBe('complete');
  });

  it('leaves the other sessions open when the app allows several subscriptions', async () => {
    const { apiKey } = await newApp({ allowMultipleSubscriptions: true });
    const customerId = await newCustomer(apiKey, 'addon-buyer@example.com');
    const first = await checkout(apiKey, { customerId });
    const second = await checkout(apiKey, { customerId });
    await payOnHostedPage(first.body.url);
    await currentSubscription(apiKey, customerId);
    expect(await status(sessionIdOf(first.body.url))).toBe('complete');
    expect(await status(sessionIdOf(second.body.url))).toBe('open');
  });
});
