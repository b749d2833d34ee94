import { randomBytes } from 'node:crypto';
import type Stripe from 'stripe';
import { withContext } from '../../src/db.js';
import { Organization } from '../../src/modules/organizations/organization.entity.js';
import { EMULATOR_SECRET_KEY } from '../../src/modules/payments/payments.runtime.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  createPaidPlan,
  payOnHostedPage,
  sessionTokenFor,
  signedNotification,
  stripeFor,
} from '../helpers/stripe-fixtures.js';

/**
 * An organization buys its own subscription through the real Stripe SDK and the emulator's hosted page;
 * its members' checks in the organization context use it while their personal contexts keep their own
 * plans. Then Stripe notifications (upgrade, pause, cancel) posted to one instance show on the very next
 * check on the other instance: two Tollgates on one database.
 */
let a: TestServer;
let b: TestServer;
let stripe: Stripe;
beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer(), startTestServer()]);
  stripe = stripeFor(a);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const SUCCESS = 'https://app.example.com/billing/done?session={CHECKOUT_SESSION_ID}';
const CANCEL = 'https://app.example.com/billing';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function customer(apiKey: string, email: string): Promise<string> {
  const res = await a.http.post('/v1/customers').set(bearer(apiKey)).send({ email });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function checkout(token: string, body: Record<string, unknown>) {
  return a.http
    .post('/v1/checkout/session')
    .set(bearer(token))
    .send({ successUrl: SUCCESS, cancelUrl: CANCEL, ...body });
}

async function pay(url: string): Promise<string> {
  const paid = await payOnHostedPage(url);
  expect(paid.status).toBe(303);
  return url.split('/').pop()!;
}

async function check(server: TestServer, token: string, feature: string) {
  const res = await server.http.get(`/v1/entitlements/check/${feature}`).set(bearer(token));
  expect(res.status).toBe(200);
  return res.body;
}

/** Posts a signed Stripe notification about `subscription` to `server` and expects it applied. */
async function notify(server: TestServer, type: string, subscription: Stripe.Subscription, created: number) {
  const event = {
    id: `evt_${randomBytes(12).toString('hex')}`,
    object: 'event',
    type,
    created,
    data: { object: subscription },
  };
  const { body, signature } = signedNotification(server, event);
  const res = await server.http
    .post('/v1/webhooks/stripe')
    .set('content-type', 'application/json')
    .set('stripe-signature', signature)
    .send(body);
  expect(res.status).toBe(200);
}

describe('organization checkout end to end', () => {
  it("gives the organization its own Stripe customer and subscription, shared by its members' checks", async () => {
    const { appId, apiKey } = await a.createApp({
      organizationsEnabled: true,
      allowedCallbackUrls: 'https://app.example.com/*',
    });
    await a.graphql(
      'mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }',
      { appId, input: { id: 'free', name: 'Free', features: { sso: false, seats: 1 }, isDefault: true } },
      a.adminToken,
    );
    await createPaidPlan(a, appId, {
      id: 'solo',
      name: 'Solo',
      features: { sso: false, seats: 1, exports: true },
    });
    await createPaidPlan(a, appId, { id: 'team', name: 'Team', features: { sso: true, seats: 25 } });
    const enterprise = await createPaidPlan(a, appId, {
      id: 'enterprise',
      name: 'Enterprise',
      features: { sso: true, seats: 500 },
    });

    const alice = await customer(apiKey, 'alice@acme.example');
    const bob = await customer(apiKey, 'bob@acme.example');
    const alicePersonal = await sessionTokenFor(a, appId, alice);
    const bobPersonal = await sessionTokenFor(a, appId, bob);

    // Alice buys a personal plan for herself.
    const soloCheckout = await checkout(alicePersonal, { planId: 'solo', customerId: alice });
    expect(soloCheckout.body).toEqual({ url: expect.any(String) });
    await pay(soloCheckout.body.url);
    await eventually(async () => ((await check(a, alicePersonal, 'exports')).allowed ? true : undefined));

    // Alice creates Acme and adds Bob as a plain member.
    const created = await a.graphql(
      'mutation { createOrganization(input: {name: "Acme"}) { id } }',
      {},
      alicePersonal,
    );
    const org: string = created.body.data.createOrganization.id;
    const added = await a.graphql(
      'mutation($o: ID!, $c: ID!) { addOrganizationMember(organizationId: $o, customerId: $c) { role } }',
      { o: org, c: bob },
      alicePersonal,
    );
    expect(added.body.data.addOrganizationMember).toEqual({ role: 'member' });

    // Billing is for owners and admins: Bob may not start the organization's checkout, Alice may.
    const refused = await checkout(bobPersonal, { planId: 'team', organizationId: org });
    expect(refused.status).toBe(403);
    const teamCheckout = await checkout(alicePersonal, { planId: 'team', organizationId: org });
    expect(teamCheckout.status).toBe(200);
    const sessionId = await pay(teamCheckout.body.url);

    const current = await eventually(async () => {
      const res = await a.http
        .get('/v1/subscriptions/current')
        .query({ organizationId: org })
        .set(bearer(apiKey));
      return res.status === 200 ? res.body : undefined;
    });
    expect(current).toMatchObject({
      organizationId: org,
      plan: { id: 'team', name: 'Team' },
      status: 'active',
    });

    // The organization has a Stripe customer of its own, not Alice's.
    const session = await stripe.checkout.sessions.retrieve(sessionId);
    const aliceRecord = await a.http.get(`/v1/customers/${alice}`).set(bearer(apiKey));
    expect(session.customer).toMatch(/^cus_/);
    expect(session.customer).not.toBe(aliceRecord.body.paymentCustomerId);
    const stored = await withContext(a.deps.orm, () => a.deps.orm.em.findOneOrFail(Organization, org));
    expect(stored.paymentCustomerId).toBe(session.customer);
    const orgCustomer = (await stripe.customers.retrieve(String(session.customer))) as Stripe.Customer;
    expect(orgCustomer.metadata).toMatchObject({ tollgate_app_id: appId, tollgate_organization_id: org });

    // Every member's check in the organization context uses the organization's subscription…
    const switchTo = async (token: string) =>
      (
        await a.graphql(
          'mutation($o: ID!) { switchOrganization(organizationId: $o) { sessionToken } }',
          { o: org },
          token,
        )
      ).body.data.switchOrganization.sessionToken as string;
    const aliceOrg = await switchTo(alicePersonal);
    const bobOrg = await switchTo(bobPersonal);
    for (const server of [a, b]) {
      for (const token of [aliceOrg, bobOrg]) {
        expect(await check(server, token, 'sso')).toEqual({ feature: 'sso', allowed: true, value: true });
        expect(await check(server, token, 'seats')).toEqual({ feature: 'seats', allowed: true, value: 25 });
      }
      // …while the same customers' personal contexts keep their personal plans.
      expect(await check(server, alicePersonal, 'sso')).toEqual({
        feature: 'sso',
        allowed: false,
        value: false,
      });
      expect(await check(server, alicePersonal, 'exports')).toEqual({
        feature: 'exports',
        allowed: true,
        value: true,
      });
      expect(await check(server, bobPersonal, 'seats')).toEqual({
        feature: 'seats',
        allowed: true,
        value: 1,
      });
    }

    // Stripe notifications change the subscription; the very next check on the other instance shows it.
    // Stripe's own JSON for the subscription, as a notification carries it.
    const raw = await fetch(`${a.payments.apiBase}/v1/subscriptions/${session.subscription}`, {
      headers: bearer(EMULATOR_SECRET_KEY),
    });
    const upgraded = (await raw.json()) as Stripe.Subscription;
    upgraded.items.data[0]!.price = { ...upgraded.items.data[0]!.price, id: enterprise.priceId };
    const now = Math.floor(Date.now() / 1000);
    await notify(a, 'customer.subscription.updated', upgraded, now + 10);
    expect(await check(b, bobOrg, 'seats')).toEqual({ feature: 'seats', allowed: true, value: 500 });
    expect(await check(a, aliceOrg, 'seats')).toEqual({ feature: 'seats', allowed: true, value: 500 });

    const paused = {
      ...upgraded,
      pause_collection: { behavior: 'void', resumes_at: null },
    } as Stripe.Subscription;
    await notify(b, 'customer.subscription.updated', paused, now + 20);
    expect(await check(a, aliceOrg, 'sso')).toEqual({ feature: 'sso', allowed: false, value: false });
    expect(await check(b, bobOrg, 'seats')).toEqual({ feature: 'seats', allowed: true, value: 1 });

    await notify(a, 'customer.subscription.updated', upgraded, now + 30);
    expect(await check(b, bobOrg, 'sso')).toEqual({ feature: 'sso', allowed: true, value: true });

    const canceled = { ...upgraded, status: 'canceled', canceled_at: now + 40 } as Stripe.Subscription;
    await notify(a, 'customer.subscription.deleted', canceled, now + 40);
    expect(await check(b, bobOrg, 'sso')).toEqual({ feature: 'sso', allowed: false, value: false });
    expect(await check(b, aliceOrg, 'seats')).toEqual({ feature: 'seats', allowed: true, value: 1 });
    // Alice's personal plan was never touched.
    expect(await check(b, alicePersonal, 'exports')).toEqual({
      feature: 'exports',
      allowed: true,
      value: true,
    });
  });
});
