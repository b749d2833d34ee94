import type Stripe from 'stripe';
import { withContext } from '../../src/db.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, stripeFor } from '../helpers/stripe-fixtures.js';

/**
 * Per-seat billing follows membership: an organization on a per-seat plan checks out for a seat per
 * member, and every membership change moves the quantity of the plan's item at Stripe (the emulator,
 * through the real SDK) by a job that reads the member count when it runs.
 */
let server: TestServer;
let stripe: Stripe;
beforeAll(async () => {
  server = await startTestServer();
  stripe = stripeFor(server);
});
afterAll(async () => {
  await server?.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const ADD = `mutation($org: ID!, $customer: ID!) {
  addOrganizationMember(organizationId: $org, customerId: $customer) { customerId }
}`;
const REMOVE = `mutation($org: ID!, $customer: ID!) {
  removeOrganizationMember(organizationId: $org, customerId: $customer)
}`;

async function sql<T = unknown>(text: string, params: unknown[] = []): Promise<T[]> {
  return withContext(server.deps.orm, () => server.deps.orm.em.getConnection().execute<T[]>(text, params));
}

/**
 * An app selling `team` per seat (min 1), an organization of one owner (and `members` more) on it, paid
 * on the hosted page.
 */
async function perSeatOrganization(options: { trialDays?: number; members?: number } = {}) {
  const { appId, apiKey } = await server.createApp({ organizationsEnabled: true });
  const fx = new Fixtures(server, appId);
  const { priceId } = await createPaidPlan(server, appId, {
    id: 'team',
    name: 'Team',
    trialDays: options.trialDays ?? 0,
  });
  const seats = await server.graphql(
    `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
    { appId, input: { id: 'team', name: 'Team', seats: { mode: 'per_seat', min: 1 } } },
    server.adminToken,
  );
  expect(seats.body.errors).toBeUndefined();
  const owner = await fx.customer();
  const roles: Record<string, 'owner' | 'member'> = { [owner]: 'owner' };
  for (let i = 0; i < (options.members ?? 0); i++) roles[await fx.customer()] = 'member';
  const orgId = await fx.organization(roles);
  const session = await server.http.post('/v1/checkout/session').set(bearer(apiKey)).send({
    planId: 'team',
    organizationId: orgId,
    successUrl: 'https://app.example.com/done',
    cancelUrl: 'https://app.example.com/',
  });
  expect(session.status).toBe(200);
  expect((await payOnHostedPage(session.body.url)).status).toBe(303);
  const [row] = await eventually(async () => {
    const rows = await sql<{ id: string; stripe_subscription_id: string; status: string }>(
      'select id, stripe_subscription_id, status from subscription where organization_id = ?',
      [orgId],
    );
    return rows.length > 0 ? rows : undefined;
  });
  return { appId, apiKey, fx, orgId, owner, priceId, subscription: row! };
}

async function quantityAtStripe(stripeSubscriptionId: string, priceId: string): Promise<number> {
  const subscription = await stripe.subscriptions.retrieve(stripeSubscriptionId);
  return subscription.items.data.find((item) => item.price.id === priceId)!.quantity!;
}

/** Waits until the quantity jobs have brought Stripe's quantity to `quantity`. */
async function quantityBecomes(stripeSubscriptionId: string, priceId: string, quantity: number) {
  await eventually(async () =>
    (await quantityAtStripe(stripeSubscriptionId, priceId)) === quantity ? true : undefined,
  );
}

/** The proration lines Stripe would bill next: the pending invoice items quantity changes left. */
async function prorations(stripeSubscriptionId: string) {
  const preview = await stripe.invoices.createPreview({ subscription: stripeSubscriptionId });
  return preview.lines.data.filter(
    (line) =>
      line.parent?.invoice_item_details?.proration === true ||
      line.parent?.subscription_item_details?.proration === true,
  );
}

async function add(apiKey: string, orgId: string, customer: string) {
  const res = await server.graphql(ADD, { org: orgId, customer }, apiKey);
  expect(res.body.errors).toBeUndefined();
}

describe('per-seat billing', () => {
  it('checks out a seat per member, follows adds and removals with prorations, and shows the quantity', async () => {
    const { apiKey, fx, orgId, priceId, subscription } = await perSeatOrganization();
    const stripeId = subscription.stripe_subscription_id;
    expect(await quantityAtStripe(stripeId, priceId)).toBe(1);
    expect(await prorations(stripeId)).toEqual([]);
    // The quantity bought at checkout shows before any membership change.
    const bought = await server.http.get(`/v1/organizations/${orgId}/seats`).set(bearer(apiKey));
    expect(bought.status).toBe(200);
    expect(bought.body.quantity).toBe(1);

    const members = [await fx.customer(), await fx.customer(), await fx.customer()];
    for (const member of members) await add(apiKey, orgId, member);
    // The owner counts: four seats.
    await quantityBecomes(stripeId, priceId, 4);
    // Three more seats at $20 for (nearly) the whole month just started, however the jobs grouped them.
    const prorated = (await prorations(stripeId)).reduce((sum, line) => sum + line.amount, 0);
    expect(prorated).toBeGreaterThanOrEqual(5990);
    expect(prorated).toBeLessThanOrEqual(6000);
    const seats = await server.http.get(`/v1/organizations/${orgId}/seats`).set(bearer(apiKey));
    expect(seats.body).toEqual({
      used: 4,
      members: 4,
      pending: 0,
      limit: null,
      quantity: 4,
      overLimit: false,
    });

    const removed = await server.graphql(REMOVE, { org: orgId, customer: members[0] }, apiKey);
    expect(removed.body).toEqual({ data: { removeOrganizationMember: true } });
    await quantityBecomes(stripeId, priceId, 3);
    await eventually(async () => {
      const res = await server.http.get(`/v1/organizations/${orgId}/seats`).set(bearer(apiKey));
      return res.body.quantity === 3 ? true : undefined;
    });
  });

  it('checks out as many seats as the organization has members', async () => {
    const { priceId, subscription } = await perSeatOrganization({ members: 2 });
    expect(await quantityAtStripe(subscription.stripe_subscription_id, priceId)).toBe(3);
  });

  it('leaves the newest count when two quantity jobs run in reverse order', async () => {
    const { apiKey, fx, orgId, priceId, subscription } = await perSeatOrganization();
    const stripeId = subscription.stripe_subscription_id;
    await add(apiKey, orgId, await fx.customer());
    await quantityBecomes(stripeId, priceId, 2);
    await eventually(async () => {
      const [row] = await sql<{ seat_version: number }>(
        'select seat_version from subscription where id = ?',
        [subscription.id],
      );
      return row!.seat_version === 1 ? true : undefined;
    });
    // Two more members join; their jobs (versions 2 and 3) run here by hand, the newer one first.
    const late = [await fx.customer(), await fx.customer()];
    for (const customer of late) {
      await sql(
        `insert into organization_member (id, organization_id, customer_id, role) values (?, ?, ?, 'member')`,
        [`mem_${customer}`, orgId, customer],
      );
    }
    await sql('update organization set seat_version = 3 where id = ?', [orgId]);
    const billing = server.services.seatBilling;
    expect(await billing.applyQuantity({ organizationId: orgId, version: 3 })).toBe('applied');
    expect(await billing.applyQuantity({ organizationId: orgId, version: 2 })).toBe('superseded');
    expect(await quantityAtStripe(stripeId, priceId)).toBe(4);
    expect(
      await sql('select seat_quantity, seat_version from subscription where id = ?', [subscription.id]),
    ).toEqual([{ seat_quantity: 4, seat_version: 3 }]);
  });

  it('changes the quantity without proration during a trial', async () => {
    const { apiKey, fx, orgId, priceId, subscription } = await perSeatOrganization({ trialDays: 14 });
    expect(subscription.status).toBe('trialing');
    const stripeId = subscription.stripe_subscription_id;
    await add(apiKey, orgId, await fx.customer());
    await quantityBecomes(stripeId, priceId, 2);
    expect(await prorations(stripeId)).toEqual([]);
    const updates = server.payments.emulator!.events.filter(
      (e) => e.type === 'customer.subscription.updated' && e.data.object.id === stripeId,
    );
    expect(updates.length).toBeGreaterThan(0);
  });

  it("bills one seat fewer after a member's erasure", async () => {
    const { apiKey, fx, orgId, priceId, subscription } = await perSeatOrganization();
    const stripeId = subscription.stripe_subscription_id;
    const member = await fx.customer();
    await add(apiKey, orgId, member);
    await quantityBecomes(stripeId, priceId, 2);
    const erased = await server.http.delete(`/v1/customers/${member}`).set(bearer(apiKey));
    expect(erased.status).toBe(200);
    await quantityBecomes(stripeId, priceId, 1);
  });

  it('refuses a new member with 409 while the per-seat subscription is past_due', async () => {
    const { apiKey, fx, orgId, subscription } = await perSeatOrganization();
    // The renewal's charge is declined at Stripe, whose notification makes the subscription past_due.
    server.payments.emulator!.renewSubscription(subscription.stripe_subscription_id, { fail: true });
    await eventually(async () => {
      const [row] = await sql<{ status: string }>('select status from subscription where id = ?', [
        subscription.id,
      ]);
      return row!.status === 'past_due' ? true : undefined;
    });
    const newcomer = await fx.customer();
    const res = await server.graphql(ADD, { org: orgId, customer: newcomer }, apiKey);
    expect(res.body.errors?.[0].message).toBe(
      "the organization's per-seat subscription is past_due: settle its payment before adding members",
    );
    expect(res.body.errors?.[0].extensions).toMatchObject({ code: 'CONFLICT', statusCode: 409 });
    expect(
      await sql('select customer_id from organization_member where organization_id = ? and customer_id = ?', [
        orgId,
        newcomer,
      ]),
    ).toEqual([]);
  });
});
