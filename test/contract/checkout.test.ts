import type Stripe from 'stripe';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, sessionTokenFor, stripeFor } from '../helpers/stripe-fixtures.js';

/** `POST /v1/checkout/session`: every body field's validation, who may check out whom, organizations. */

let server: TestServer;
let stripe: Stripe;
let app: { appId: string; apiKey: string };
let customerId: string;

beforeAll(async () => {
  server = await startTestServer();
  stripe = stripeFor(server);
  app = await server.createApp({
    organizationsEnabled: true,
    allowedCallbackUrls: 'https://shop.example.com/*',
  });
  await createPaidPlan(server, app.appId, { id: 'pro', name: 'Pro' });
  const free = await server.graphql(
    'mutation($appId: ID!) { upsertPlan(appId: $appId, input: {id: "free", name: "Free", isDefault: true}) { id } }',
    { appId: app.appId },
    server.adminToken,
  );
  expect(free.body.errors).toBeUndefined();
  customerId = await newCustomer('buyer@example.com');
});
afterAll(async () => {
  await server.close();
});

const URLS = { successUrl: 'https://shop.example.com/ok', cancelUrl: 'https://shop.example.com/cancel' };

async function newCustomer(email: string, apiKey = app.apiKey): Promise<string> {
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email });
  expect(res.status).toBe(201);
  return res.body.id;
}

function checkout(body: unknown, token: string | null = app.apiKey) {
  const req = server.http.post('/v1/checkout/session');
  if (token) req.set('authorization', `Bearer ${token}`);
  return req.send(body as object);
}

async function expectError(res: { status: number; body: unknown }, status: number, message: string) {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { statusCode: status, message, error: expect.any(String) },
  });
}

describe('POST /v1/checkout/session validation', () => {
  it('answers 200 with only the hosted page url', async () => {
    const res = await checkout({ planId: 'pro', customerId, ...URLS });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: expect.stringMatching(/\/checkout\/cs_test_/) });
  });

  it('needs exactly one of customerId, email and organizationId', async () => {
    const message = 'exactly one of customerId, email or organizationId is required';
    await expectError(await checkout({ planId: 'pro', ...URLS }), 400, message);
    await expectError(
      await checkout({ planId: 'pro', customerId, email: 'x@example.com', ...URLS }),
      400,
      message,
    );
    await expectError(
      await checkout({ planId: 'pro', customerId, organizationId: 'org_x', email: 'x@example.com', ...URLS }),
      400,
      message,
    );
  });

  it('requires planId, successUrl and cancelUrl', async () => {
    await expectError(
      await checkout({ customerId }),
      400,
      'planId: is required; successUrl: is required; cancelUrl: is required',
    );
  });

  it('requires absolute http(s) URLs with a scheme', async () => {
    const message = 'must be an absolute http(s) URL including the scheme';
    await expectError(
      await checkout({ planId: 'pro', customerId, successUrl: '/ok', cancelUrl: URLS.cancelUrl }),
      400,
      `successUrl: ${message}`,
    );
    await expectError(
      await checkout({
        planId: 'pro',
        customerId,
        successUrl: URLS.successUrl,
        cancelUrl: 'javascript:alert(1)',
      }),
      400,
      `cancelUrl: ${message}`,
    );
    await expectError(
      await checkout({
        planId: 'pro',
        customerId,
        successUrl: 'shop.example.com/ok',
        cancelUrl: URLS.cancelUrl,
      }),
      400,
      `successUrl: ${message}`,
    );
  });

  it('names unknown fields and checks field types', async () => {
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS, quantity: 2 }),
      400,
      'unknown field: quantity',
    );
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS, collectBillingAddress: 'yes' }),
      400,
      'collectBillingAddress: Invalid input: expected boolean, received string',
    );
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS, metadata: [1] }),
      400,
      'metadata: must be an object',
    );
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS, metadata: { ['😀'.repeat(41)]: 1 } }),
      400,
      'metadata: keys must be 1 to 40 characters (got one of 41)',
    );
    await expectError(
      await checkout({
        planId: 'pro',
        customerId,
        ...URLS,
        metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
      }),
      400,
      'metadata: must have at most 50 keys (would have 51)',
    );
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS, metadata: { blob: 'x'.repeat(16 * 1024 - 10) } }),
      400,
      'metadata: must be at most 16384 bytes as JSON (would be 16385)',
    );
    await expectError(
      await checkout({ planId: 'pro', email: 'not-an-email', ...URLS }),
      400,
      'email: must be a valid e-mail address',
    );
  });

  it('refuses a plan the app does not have, and a free plan', async () => {
    await expectError(
      await checkout({ planId: 'gold', customerId, ...URLS }),
      400,
      'planId: the app has no plan "gold"',
    );
    await expectError(
      await checkout({ planId: 'free', customerId, ...URLS }),
      400,
      'planId: plan "free" has no Stripe price, so it needs no checkout',
    );
  });

  it('answers 404 for a customer or organization of another app', async () => {
    const other = await server.createApp({ organizationsEnabled: true });
    const theirs = await newCustomer('theirs@example.com', other.apiKey);
    await expectError(
      await checkout({ planId: 'pro', customerId: theirs, ...URLS }),
      404,
      `Customer ${theirs} not found`,
    );
    const org = await createOrganization(other.apiKey, theirs);
    await expectError(
      await checkout({ planId: 'pro', organizationId: org, ...URLS }),
      404,
      `Organization ${org} not found`,
    );
  });
});

describe('POST /v1/checkout/session credentials', () => {
  it('answers 401 without a credential', async () => {
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS }, null),
      401,
      'Invalid or missing credentials',
    );
  });

  it('answers 403 to the admin token', async () => {
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS }, server.adminToken),
      403,
      'This operation needs an API key or a customer session token',
    );
  });

  it('lets a customer session check out only its own customer', async () => {
    const own = await newCustomer('self@example.com');
    const token = await sessionTokenFor(server, app.appId, own);
    const res = await checkout({ planId: 'pro', customerId: own, ...URLS }, token);
    expect(res.status).toBe(200);
    await expectError(
      await checkout({ planId: 'pro', customerId, ...URLS }, token),
      403,
      'A customer session can start a checkout only for its own customer',
    );
    await expectError(
      await checkout({ planId: 'pro', email: 'someone@example.com', ...URLS }, token),
      403,
      'A customer session starts a checkout with its own customerId, not an e-mail',
    );
  });

  it("holds a session's redirect URLs to the app's allowed callback patterns", async () => {
    const own = await newCustomer('redirects@example.com');
    const token = await sessionTokenFor(server, app.appId, own);
    await expectError(
      await checkout(
        { planId: 'pro', customerId: own, successUrl: 'https://evil.example/x', cancelUrl: URLS.cancelUrl },
        token,
      ),
      400,
      "successUrl: must match one of the app's allowed callback URL patterns",
    );
    const local = await checkout(
      {
        planId: 'pro',
        customerId: own,
        successUrl: 'http://localhost:3000/ok',
        cancelUrl: 'http://localhost:3000/no',
      },
      token,
    );
    expect(local.status).toBe(200);
  });

  it('makes one Stripe customer for concurrent checkouts of a customer without one', async () => {
    const fresh = await newCustomer('concurrent@example.com');
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => checkout({ planId: 'pro', customerId: fresh, ...URLS })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    const customer = await server.http
      .get(`/v1/customers/${fresh}`)
      .set('authorization', `Bearer ${app.apiKey}`);
    expect(customer.body.paymentCustomerId).toMatch(/^cus_/);
    const atStripe = await stripe.customers.list({ email: 'concurrent@example.com' });
    expect(atStripe.data.map((c) => c.id)).toEqual([customer.body.paymentCustomerId]);
  });

  it("checks out an existing customer's e-mail as that customer", async () => {
    const existing = await newCustomer('Known@Example.com');
    const res = await checkout({ planId: 'pro', email: 'known@example.com', ...URLS });
    expect(res.status).toBe(200);
    const session = await stripe.checkout.sessions.retrieve(res.body.url.split('/').pop());
    expect(session.metadata).toMatchObject({ tollgate_customer_id: existing });
    expect(session.customer).toMatch(/^cus_/);
  });
});

async function createOrganization(apiKey: string, ownerCustomerId: string): Promise<string> {
  const res = await server.graphql(
    'mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { id } }',
    { input: { name: 'Acme', ownerCustomerId } },
    apiKey,
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data.createOrganization.id;
}

describe('organization checkout', () => {
  it('gives the organization its own Stripe customer and subscription, shared by its members', async () => {
    const owner = await newCustomer('owner@example.com');
    const member = await newCustomer('member@example.com');
    const org = await createOrganization(app.apiKey, owner);
    const added = await server.graphql(
      'mutation($o: ID!, $c: ID!) { addOrganizationMember(organizationId: $o, customerId: $c, role: member) { role } }',
      { o: org, c: member },
      app.apiKey,
    );
    expect(added.body.errors).toBeUndefined();

    const memberToken = await sessionTokenFor(server, app.appId, member);
    await expectError(
      await checkout({ planId: 'pro', organizationId: org, ...URLS }, memberToken),
      403,
      'Only an owner or admin of the organization can start its checkout',
    );

    const ownerToken = await sessionTokenFor(server, app.appId, owner);
    const res = await checkout(
      { planId: 'pro', organizationId: org, ...URLS, metadata: { seats: 5 } },
      ownerToken,
    );
    expect(res.status).toBe(200);
    const session = await stripe.checkout.sessions.retrieve(res.body.url.split('/').pop());
    expect(session.metadata).toEqual({
      tollgate_app_id: app.appId,
      tollgate_plan_id: 'pro',
      tollgate_organization_id: org,
    });
    const orgCustomer = (await stripe.customers.retrieve(String(session.customer))) as Stripe.Customer;
    expect(orgCustomer).toMatchObject({ name: 'Acme', email: 'owner@example.com' });
    const ownerRecord = await server.http
      .get(`/v1/customers/${owner}`)
      .set('authorization', `Bearer ${app.apiKey}`);
    expect(ownerRecord.body.paymentCustomerId).toBeNull();

    await payOnHostedPage(res.body.url);
    const subscription = await eventually(async () => {
      const current = await server.http
        .get('/v1/subscriptions/current')
        .query({ organizationId: org })
        .set('authorization', `Bearer ${app.apiKey}`);
      return current.status === 200 ? current.body : undefined;
    });
    expect(subscription).toMatchObject({
      organizationId: org,
      customerId: null,
      plan: { id: 'pro' },
      metadata: { seats: 5 },
    });

    const memberOrgToken = await sessionTokenFor(server, app.appId, member, org);
    const seen = await server.http
      .get('/v1/subscriptions/current')
      .set('authorization', `Bearer ${memberOrgToken}`);
    expect(seen.status).toBe(200);
    expect(seen.body.id).toBe(subscription.id);
    const personal = await server.http
      .get('/v1/subscriptions/current')
      .set('authorization', `Bearer ${memberToken}`);
    expect(personal.status).toBe(404);
  });

  it('answers 403 when the app has organizations disabled', async () => {
    const plain = await server.createApp();
    await createPaidPlan(server, plain.appId, { id: 'pro' });
    const res = await checkout({ planId: 'pro', organizationId: 'org_any', ...URLS }, plain.apiKey);
    await expectError(res, 403, 'Organizations are not enabled for this app');
  });
});
