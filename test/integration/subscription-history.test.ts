import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CUSTOMER_HISTORY = `query($id: ID!) {
  customer(id: $id) { id subscriptions { id customerId organizationId status cancelAtPeriodEnd plan { id name } } }
}`;
const OWN_HISTORY = `{ subscriptions { id status plan { id } } }`;

let server: TestServer;
let apiKey: string;
let billing: BillingFixtures;
let basic: Awaited<ReturnType<BillingFixtures['plan']>>;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp({ organizationsEnabled: true });
  apiKey = app.apiKey;
  billing = new BillingFixtures(server, app.appId);
  basic = await billing.plan({ slug: 'basic', unitAmount: 900 });
  pro = await billing.plan({ slug: 'pro', unitAmount: 2000 });
});

afterAll(async () => {
  await server?.close();
});

const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000);

/** A customer who had basic (canceled), then pro (paused), then pro again (active), oldest first. */
async function customerWithHistory() {
  const customer = await billing.customer();
  const owner = { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! };
  const first = await billing.subscription(owner, basic, { createdAt: minutesAgo(30) });
  const second = await billing.subscription(owner, pro, { createdAt: minutesAgo(20) });
  const third = await billing.subscription(owner, pro, { createdAt: minutesAgo(10) });
  const post = (id: string, action: string) =>
    server.http.post(`/v1/subscriptions/${id}/${action}`).set('authorization', `Bearer ${apiKey}`);
  expect((await post(first.id, 'cancel')).status).toBe(200);
  expect((await post(second.id, 'pause')).status).toBe(200);
  return { customer, ids: [third.id, second.id, first.id] };
}

describe('subscription history', () => {
  it('lists every subscription of a customer, canceled ones included, newest first (API key)', async () => {
    const { customer, ids } = await customerWithHistory();
    const res = await server.graphql(CUSTOMER_HISTORY, { id: customer.id }, apiKey);
    expect(res.body).toEqual({
      data: {
        customer: {
          id: customer.id,
          subscriptions: [
            {
              id: ids[0],
              customerId: customer.id,
              organizationId: null,
              status: 'active',
              cancelAtPeriodEnd: false,
              plan: { id: 'pro', name: 'PRO' },
            },
            {
              id: ids[1],
              customerId: customer.id,
              organizationId: null,
              status: 'paused',
              cancelAtPeriodEnd: false,
              plan: { id: 'pro', name: 'PRO' },
            },
            {
              id: ids[2],
              customerId: customer.id,
              organizationId: null,
              status: 'canceled',
              cancelAtPeriodEnd: false,
              plan: { id: 'basic', name: 'BASIC' },
            },
          ],
        },
      },
    });
  });

  it('gives each customer of a list its own history (batched), and an empty one to a customer without any', async () => {
    const { customer, ids } = await customerWithHistory();
    const empty = await billing.customer({ linked: false });
    const res = await server.graphql(
      `{ customers(limit: 100) { data { id subscriptions { id } } } }`,
      {},
      apiKey,
    );
    expect(res.body.errors).toBeUndefined();
    const byId = new Map<string, { id: string }[]>(
      res.body.data.customers.data.map((c: { id: string; subscriptions: { id: string }[] }) => [
        c.id,
        c.subscriptions,
      ]),
    );
    expect(byId.get(customer.id)).toEqual(ids.map((id) => ({ id })));
    expect(byId.get(empty.id)).toEqual([]);
  });

  it('gives a customer session its own history with the subscriptions query', async () => {
    const { customer, ids } = await customerWithHistory();
    await customerWithHistory();
    const token = await billing.session(customer.id);
    const res = await server.graphql(OWN_HISTORY, {}, token);
    expect(res.body).toEqual({
      data: {
        subscriptions: [
          { id: ids[0], status: 'active', plan: { id: 'pro' } },
          { id: ids[1], status: 'paused', plan: { id: 'pro' } },
          { id: ids[2], status: 'canceled', plan: { id: 'basic' } },
        ],
      },
    });
  });

  it("gives a session switched to an organization the organization's history", async () => {
    const owner = await billing.customer();
    const member = await billing.customer();
    const organizationId = await billing.organization([
      { customerId: owner.id, role: 'owner' },
      { customerId: member.id, role: 'member' },
    ]);
    const org = { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId!, organizationId };
    const older = await billing.subscription(org, basic, { createdAt: minutesAgo(5) });
    const newer = await billing.subscription(org, pro);
    const personal = await billing.subscription(
      { customerId: member.id, stripeCustomerId: member.stripeCustomerId! },
      basic,
    );

    const inOrganization = await server.graphql(
      OWN_HISTORY,
      {},
      await billing.session(member.id, organizationId),
    );
    expect(inOrganization.body.data.subscriptions.map((s: { id: string }) => s.id)).toEqual([
      newer.id,
      older.id,
    ]);
    const alone = await server.graphql(OWN_HISTORY, {}, await billing.session(member.id));
    expect(alone.body.data.subscriptions.map((s: { id: string }) => s.id)).toEqual([personal.id]);
  });

  it("answers 404 for another app's customer, 400 for the subscriptions query with an API key naming no context, 401 without a credential", async () => {
    const { customer } = await customerWithHistory();
    const other = await server.createApp();
    const foreign = await server.graphql(CUSTOMER_HISTORY, { id: customer.id }, other.apiKey);
    expect(foreign.body.errors?.[0].extensions).toMatchObject({ code: 'NOT_FOUND', statusCode: 404 });
    const withKey = await server.graphql(OWN_HISTORY, {}, apiKey);
    expect(withKey.body.errors?.[0]).toMatchObject({
      message: 'exactly one of customerId or organizationId is required',
      extensions: { statusCode: 400 },
    });
    const anonymous = await server.graphql(OWN_HISTORY, {});
    expect(anonymous.body.errors?.[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED', statusCode: 401 });
  });
});
