import { randomBytes } from 'node:crypto';
import { Tollgate, TollgateError } from '@tollgate/client';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The billing moves through @tollgate/client against a real Tollgate: plan change, the customer portal,
 * sync with Stripe, deletion, and the `Idempotency-Key` option (replayed, conflicting, refused).
 */
let server: TestServer;
let apiKey: string;
let client: Tollgate;
let billing: BillingFixtures;
let basic: Awaited<ReturnType<BillingFixtures['plan']>>;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;
/** The answers' `Idempotent-Replayed` headers, in order, as the client's fetch saw them. */
const replayed: (string | null)[] = [];

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp();
  apiKey = app.apiKey;
  client = new Tollgate({
    apiKey,
    baseUrl: server.url,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      replayed.push(response.headers.get('idempotent-replayed'));
      return response;
    },
  });
  billing = new BillingFixtures(server, app.appId);
  basic = await billing.plan({ slug: 'basic', unitAmount: 1000, features: { seats: 1 } });
  pro = await billing.plan({ slug: 'pro', unitAmount: 3000, features: { seats: 10 } });
});

afterAll(async () => {
  await server?.close();
});

async function failure(call: Promise<unknown>): Promise<TollgateError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TollgateError)) throw new Error(`expected a TollgateError, got ${String(error)}`);
  return error;
}

const rest = (path: string) => server.http.get(path).set('authorization', `Bearer ${apiKey}`);

async function subscribedTo(plan: typeof basic) {
  const customer = await billing.customer();
  const subscription = await billing.subscription(
    { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
    plan,
  );
  return { customer, ...subscription };
}

describe('Tollgate billing moves', () => {
  it('changes a subscription to another plan: at Stripe and in the entitlements; the same plan again is 409', async () => {
    const { customer, id, stripeSubscriptionId } = await subscribedTo(basic);
    expect(await client.entitlements.get({ customerId: customer.id })).toEqual({
      planName: 'BASIC',
      features: { seats: 1 },
    });

    const changed = await client.subscriptions.changePlan(id, { planId: 'pro', prorationBehavior: 'none' });
    expect(changed).toMatchObject({
      id,
      customerId: customer.id,
      plan: { id: 'pro', name: 'PRO' },
      status: 'active',
      cancelAtPeriodEnd: false,
    });
    expect(await client.entitlements.get({ customerId: customer.id })).toEqual({
      planName: 'PRO',
      features: { seats: 10 },
    });
    const remote = await billing.stripe.subscriptions.retrieve(stripeSubscriptionId);
    expect(remote.items.data.map((item) => item.price.id)).toEqual([pro.price.id]);

    const same = await failure(client.subscriptions.changePlan(id, { planId: 'pro' }));
    expect(same).toMatchObject({
      statusCode: 409,
      error: 'Conflict',
      message: 'The subscription is already on plan "pro"',
    });
    const unknown = await failure(client.subscriptions.changePlan(id, { planId: 'platinum' }));
    expect(unknown).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: 'planId: the app has no plan "platinum"',
    });
  });

  it("opens the customer portal: a link to the emulator's portal page for that customer", async () => {
    const { customer } = await subscribedTo(basic);
    const portal = await client.billingPortal.createSession({
      customerId: customer.id,
      returnUrl: 'https://shop.example.com/account',
    });
    expect(Object.keys(portal)).toEqual(['url']);
    expect(portal.url.startsWith(`${server.payments.emulator!.url}/portal/`)).toBe(true);
    const page = await fetch(portal.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const { email } = (await billing.stripe.customers.retrieve(customer.stripeCustomerId!)) as {
      email: string;
    };
    expect(await page.text()).toContain(`Billing for ${email}`);

    const both = await failure(
      client.billingPortal.createSession({
        customerId: customer.id,
        organizationId: 'org_x',
        returnUrl: 'https://shop.example.com/account',
      }),
    );
    expect(both).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: 'exactly one of customerId or organizationId is required',
    });
  });

  it("syncs a customer's subscriptions from Stripe: a subscription made at Stripe alone is imported", async () => {
    const customer = await billing.customer();
    // Made straight at Stripe: no Tollgate row is written for it here; the sync answers it imported.
    const remote = await billing.stripe.subscriptions.create({
      customer: customer.stripeCustomerId!,
      items: [{ price: pro.price.id }],
    });
    const synced = await client.customers.sync(customer.id);
    expect(synced.skipped).toEqual([]);
    expect(synced.subscriptions).toHaveLength(1);
    expect(synced.subscriptions[0]).toMatchObject({
      customerId: customer.id,
      plan: { id: 'pro', name: 'PRO' },
      status: remote.status,
    });
    const listed = await client.subscriptions.list({ customerId: customer.id });
    expect(listed.data.map((s) => s.id)).toEqual([synced.subscriptions[0]!.id]);

    const unlinked = await billing.customer({ linked: false });
    expect(await client.customers.sync(unlinked.id)).toEqual({ subscriptions: [], skipped: [] });
    const missing = await failure(client.customers.sync('cus_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'));
    expect(missing).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('deletes a customer: the answer, then 404 over REST and through the client', async () => {
    const customer = await client.customers.create({
      email: `gone-${randomBytes(4).toString('hex')}@example.com`,
    });
    expect(await client.customers.delete(customer.id)).toEqual({ id: customer.id, deleted: true });
    const over = await rest(`/v1/customers/${customer.id}`);
    expect(over.status).toBe(404);
    expect(over.body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      message: `Customer ${customer.id} not found`,
    });
    const retrieved = await failure(client.customers.retrieve(customer.id));
    expect(retrieved).toMatchObject({ statusCode: 404, error: 'Not Found' });
    const again = await failure(client.customers.delete(customer.id));
    expect(again).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('replays a POST sent again with the same idempotency key; another body with that key is 409', async () => {
    const email = `idem-${randomBytes(4).toString('hex')}@example.com`;
    const key = `create-${randomBytes(6).toString('hex')}`;
    const first = await client.customers.create({ email, metadata: { n: 1 } }, { idempotencyKey: key });
    expect(replayed.at(-1)).toBeNull();
    const again = await client.customers.create({ metadata: { n: 1 }, email }, { idempotencyKey: key });
    expect(replayed.at(-1)).toBe('true');
    expect(again).toEqual(first);

    const other = await failure(client.customers.create({ email: `x${email}` }, { idempotencyKey: key }));
    expect(other).toMatchObject({
      statusCode: 409,
      error: 'Conflict',
      message:
        'Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request',
    });
    const listed = await client.customers.list({ email });
    expect(listed.pagination.total).toBe(1);
    expect(listed.data.map((c) => c.id)).toEqual([first.id]);
    expect((await client.customers.list({ email: `x${email}` })).pagination.total).toBe(0);
  });

  it('replays a plan change sent again with the same key: one change', async () => {
    const { id } = await subscribedTo(basic);
    const key = `change-${randomBytes(6).toString('hex')}`;
    const first = await client.subscriptions.changePlan(id, { planId: 'pro' }, { idempotencyKey: key });
    const again = await client.subscriptions.changePlan(id, { planId: 'pro' }, { idempotencyKey: key });
    expect(replayed.at(-1)).toBe('true');
    expect(again).toEqual(first);
    expect(first.plan.id).toBe('pro');
  });

  it('refuses an idempotency key where the answer carries a secret: webhook endpoint creation and rotation', async () => {
    const created = await failure(
      client.webhookEndpoints.create(
        { url: 'https://hooks.example.com/in', events: ['customer.created'] },
        { idempotencyKey: `hook-${randomBytes(6).toString('hex')}` },
      ),
    );
    expect(created).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message:
        'Idempotency-Key is not accepted here: this endpoint is public, or its answer carries a secret',
    });
    expect((await client.webhookEndpoints.list()).data).toEqual([]);

    const endpoint = await client.webhookEndpoints.create({
      url: 'https://hooks.example.com/in',
      events: ['customer.created'],
    });
    const rotated = await failure(
      client.webhookEndpoints.rotateSecret(endpoint.endpoint.id, {
        idempotencyKey: `rotate-${randomBytes(6).toString('hex')}`,
      }),
    );
    expect(rotated).toMatchObject({ statusCode: 400, error: 'Bad Request', message: created.message });
    // Without the key it works, and the new secret is another one.
    const fresh = await client.webhookEndpoints.rotateSecret(endpoint.endpoint.id);
    expect(fresh.secret).toMatch(/^whsec_/);
    expect(fresh.secret).not.toBe(endpoint.secret);
  });
});
