import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The operations the dashboard needs take an `appId`: the admin token must name it and then acts as that
 * app's API key would (same core, same rules); an API key or session may leave it out or name its own
 * app; naming another app is answered as if it did not exist.
 */

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const CUSTOMERS = `query($appId: ID, $email: String) {
  customers(appId: $appId, email: $email) { pagination { total } data { id email } }
}`;
const CUSTOMER = `query($id: ID!, $appId: ID) {
  customer(id: $id, appId: $appId) { id email subscriptions { id status plan { id } } }
}`;
const CURRENT = `query($customerId: ID, $appId: ID) {
  currentSubscription(customerId: $customerId, appId: $appId) { id status }
}`;
const ENTITLEMENTS = `query($customerId: ID, $appId: ID) {
  entitlements(customerId: $customerId, appId: $appId) { planName features }
}`;
const INVOICES = `query($customerId: ID, $appId: ID) {
  invoices(customerId: $customerId, appId: $appId) { id status amountPaid }
}`;
const ORGANIZATIONS = `query($customerId: ID, $appId: ID) {
  organizations(customerId: $customerId, appId: $appId) { id name }
}`;
const PAUSE = 'mutation($id: ID!, $appId: ID) { pauseSubscription(id: $id, appId: $appId) { id status } }';
const RESUME = 'mutation($id: ID!, $appId: ID) { resumeSubscription(id: $id, appId: $appId) { id status } }';
const CANCEL = 'mutation($id: ID!, $appId: ID) { cancelSubscription(id: $id, appId: $appId) { id status } }';
const CHANGE_PLAN = `mutation($id: ID!, $planId: ID!, $appId: ID) {
  changeSubscriptionPlan(id: $id, planId: $planId, appId: $appId) { id status plan { id } }
}`;
const PREVIEW = `query($id: ID!, $planId: ID!, $appId: ID) {
  previewSubscriptionPlanChange(id: $id, planId: $planId, appId: $appId) { currency }
}`;
const CHECK = `query($appId: ID!, $url: String!) {
  checkCallbackUrl(appId: $appId, url: $url) { allowed matchedPattern }
}`;

async function createCustomer(apiKey: string, email: string): Promise<string> {
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email })
    .expect(201);
  return res.body.id;
}

function errorOf(res: { body: { errors?: any[] } }) {
  const [error] = res.body.errors ?? [];
  return { message: error?.message, code: error?.extensions?.code };
}

describe('operations the operator runs on an app it names', () => {
  it('refuses the admin token without appId, naming the argument', async () => {
    const res = await server.graphql(CUSTOMERS, {}, server.adminToken);
    expect(res.body.data).toBeNull();
    expect(errorOf(res)).toEqual({
      message: 'appId: is required for the admin token',
      code: 'BAD_USER_INPUT',
    });
    for (const query of [ENTITLEMENTS, CURRENT, INVOICES]) {
      const other = await server.graphql(query, { customerId: 'cus_x' }, server.adminToken);
      expect(errorOf(other)).toEqual({
        message: 'appId: is required for the admin token',
        code: 'BAD_USER_INPUT',
      });
    }
  });

  it('answers 404 when the admin token names an app that does not exist', async () => {
    const res = await server.graphql(CUSTOMERS, { appId: 'app_missing' }, server.adminToken);
    expect(errorOf(res)).toEqual({ message: 'App app_missing not found', code: 'NOT_FOUND' });
  });

  it("lists and reads the named app's customers, and only that app's", async () => {
    const a = await server.createApp();
    const b = await server.createApp();
    const mine = await createCustomer(a.apiKey, 'scope-one@example.com');
    const theirs = await createCustomer(b.apiKey, 'scope-one@example.org');

    const listed = await server.graphql(CUSTOMERS, { appId: a.appId, email: 'SCOPE-ONE' }, server.adminToken);
    expect(listed.body).toEqual({
      data: { customers: { pagination: { total: 1 }, data: [{ id: mine, email: 'scope-one@example.com' }] } },
    });
    const read = await server.graphql(CUSTOMER, { id: mine, appId: a.appId }, server.adminToken);
    expect(read.body).toEqual({
      data: { customer: { id: mine, email: 'scope-one@example.com', subscriptions: [] } },
    });
    const crossed = await server.graphql(CUSTOMER, { id: theirs, appId: a.appId }, server.adminToken);
    expect(errorOf(crossed)).toEqual({ message: `Customer ${theirs} not found`, code: 'NOT_FOUND' });
  });

  it('lets an API key leave appId out or name its own app, and answers 404 for another app', async () => {
    const a = await server.createApp();
    const b = await server.createApp();
    const mine = await createCustomer(a.apiKey, 'scope-key@example.com');

    const omitted = await server.graphql(CUSTOMERS, {}, a.apiKey);
    expect(omitted.body.data.customers.data).toEqual([{ id: mine, email: 'scope-key@example.com' }]);
    const named = await server.graphql(CUSTOMER, { id: mine, appId: a.appId }, a.apiKey);
    expect(named.body.data.customer.id).toBe(mine);

    for (const [query, variables] of [
      [CUSTOMERS, { appId: b.appId }],
      [CUSTOMER, { id: mine, appId: b.appId }],
      [ENTITLEMENTS, { customerId: mine, appId: b.appId }],
      [CURRENT, { customerId: mine, appId: b.appId }],
      [INVOICES, { customerId: mine, appId: b.appId }],
      [CHECK, { appId: b.appId, url: 'https://example.com/' }],
    ] as const) {
      const res = await server.graphql(query, variables, a.apiKey);
      expect(errorOf(res)).toEqual({ message: `App ${b.appId} not found`, code: 'NOT_FOUND' });
    }
  });

  it("reads a customer's subscription, entitlements, invoices and organizations, and pauses and resumes", async () => {
    const a = await server.createApp({ organizationsEnabled: true });
    const other = await server.createApp();
    const billing = new BillingFixtures(server, a.appId);
    const plan = await billing.plan({ slug: 'pro' });
    const customer = await billing.customer();
    const subscription = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      plan,
    );
    const organizationId = await billing.organization([{ customerId: customer.id, role: 'owner' }]);
    const admin = server.adminToken;
    const named = { customerId: customer.id, appId: a.appId };

    expect((await server.graphql(CURRENT, named, admin)).body).toEqual({
      data: { currentSubscription: { id: subscription.id, status: 'active' } },
    });
    expect((await server.graphql(ENTITLEMENTS, named, admin)).body).toEqual({
      data: { entitlements: { planName: 'PRO', features: { seats: 5 } } },
    });
    const invoices = await server.graphql(INVOICES, named, admin);
    expect(invoices.body.data.invoices).toEqual([
      { id: expect.stringMatching(/^in_/), status: 'paid', amountPaid: 2000 },
    ]);
    expect((await server.graphql(ORGANIZATIONS, named, admin)).body).toEqual({
      data: { organizations: [{ id: organizationId, name: 'Acme' }] },
    });
    const history = await server.graphql(CUSTOMER, { id: customer.id, appId: a.appId }, admin);
    expect(history.body.data.customer.subscriptions).toEqual([
      { id: subscription.id, status: 'active', plan: { id: 'pro' } },
    ]);

    // Naming another app hides the subscription, as it would from that app's key.
    const hidden = await server.graphql(PAUSE, { id: subscription.id, appId: other.appId }, admin);
    expect(errorOf(hidden)).toEqual({
      message: `Subscription ${subscription.id} not found`,
      code: 'NOT_FOUND',
    });
    const unnamed = await server.graphql(PAUSE, { id: subscription.id }, admin);
    expect(errorOf(unnamed).code).toBe('BAD_USER_INPUT');
    expect((await billing.stored(subscription.id)).status).toBe('active');

    const paused = await server.graphql(PAUSE, { id: subscription.id, appId: a.appId }, admin);
    expect(paused.body).toEqual({ data: { pauseSubscription: { id: subscription.id, status: 'paused' } } });
    expect((await billing.stored(subscription.id)).status).toBe('paused');
    const remote = await billing.stripe.subscriptions.retrieve(subscription.stripeSubscriptionId);
    expect(remote.pause_collection).not.toBeNull();
    // A paused subscription grants nothing: the API key sees the same as the operator.
    expect((await server.graphql(ENTITLEMENTS, { customerId: customer.id }, a.apiKey)).body).toEqual({
      data: { entitlements: { planName: null, features: {} } },
    });
    const resumed = await server.graphql(RESUME, { id: subscription.id, appId: a.appId }, admin);
    expect(resumed.body).toEqual({ data: { resumeSubscription: { id: subscription.id, status: 'active' } } });

    // Plan changes and their preview follow the same rule: the operator names the app, then acts as its key.
    await billing.plan({ slug: 'team', unitAmount: 5000, features: { seats: 25 } });
    const unnamedPreview = await server.graphql(PREVIEW, { id: subscription.id, planId: 'team' }, admin);
    expect(errorOf(unnamedPreview)).toEqual({
      message: 'appId: is required for the admin token',
      code: 'BAD_USER_INPUT',
    });
    const preview = await server.graphql(
      PREVIEW,
      { id: subscription.id, planId: 'team', appId: a.appId },
      admin,
    );
    expect(preview.body.errors).toBeUndefined();
    expect(preview.body.data.previewSubscriptionPlanChange.currency).toBe('usd');
    const elsewhere = await server.graphql(
      CHANGE_PLAN,
      { id: subscription.id, planId: 'team', appId: other.appId },
      admin,
    );
    expect(errorOf(elsewhere).code).toBe('BAD_USER_INPUT');
    const unnamedChange = await server.graphql(CHANGE_PLAN, { id: subscription.id, planId: 'team' }, admin);
    expect(errorOf(unnamedChange)).toEqual({
      message: 'appId: is required for the admin token',
      code: 'BAD_USER_INPUT',
    });
    expect((await billing.stored(subscription.id)).plan.slug).toBe('pro');
    const changed = await server.graphql(
      CHANGE_PLAN,
      { id: subscription.id, planId: 'team', appId: a.appId },
      admin,
    );
    expect(changed.body).toEqual({
      data: { changeSubscriptionPlan: { id: subscription.id, status: 'active', plan: { id: 'team' } } },
    });
    expect((await server.graphql(ENTITLEMENTS, named, admin)).body).toEqual({
      data: { entitlements: { planName: 'TEAM', features: { seats: 25 } } },
    });

    const canceled = await server.graphql(CANCEL, { id: subscription.id, appId: a.appId }, admin);
    expect(canceled.body).toEqual({
      data: { cancelSubscription: { id: subscription.id, status: 'canceled' } },
    });
  });

  it('leaves the /v1 routes as they were: their paths name no app, so the admin token gets 403 there', async () => {
    for (const path of [
      '/v1/customers',
      '/v1/entitlements?customerId=cus_x',
      '/v1/subscriptions/current?customerId=cus_x',
    ]) {
      const res = await server.http.get(path).set('authorization', `Bearer ${server.adminToken}`);
      expect(res.status).toBe(403);
    }
    const paused = await server.http
      .post('/v1/subscriptions/sub_x/pause')
      .set('authorization', `Bearer ${server.adminToken}`)
      .send({});
    expect(paused.status).toBe(403);
  });

  it('keeps a session to its own customer even when it names its own app', async () => {
    const a = await server.createApp();
    const billing = new BillingFixtures(server, a.appId);
    const one = await billing.customer({ linked: false });
    const two = await billing.customer({ linked: false });
    const token = await billing.session(one.id);
    const own = await server.graphql(INVOICES, { appId: a.appId }, token);
    expect(own.body).toEqual({ data: { invoices: [] } });
    const others = await server.graphql(INVOICES, { customerId: two.id, appId: a.appId }, token);
    expect(errorOf(others)).toEqual({ message: `Customer ${two.id} not found`, code: 'NOT_FOUND' });
    // Customers stay API-key business: naming the app does not widen a session's rights.
    const listed = await server.graphql(CUSTOMERS, { appId: a.appId }, token);
    expect(errorOf(listed).code).toBe('FORBIDDEN');
  });
});

describe('app', () => {
  const APP = 'query($id: ID) { app(id: $id) { id settings { magicLinkExpiryMinutes } } }';

  it("lets an API key read its own app (not its keys), answers null for another app's id", async () => {
    const a = await server.createApp({ magicLinkExpiryMinutes: 33 });
    const b = await server.createApp();
    const own = { data: { app: { id: a.appId, settings: { magicLinkExpiryMinutes: 33 } } } };
    expect((await server.graphql(APP, {}, a.apiKey)).body).toEqual(own);
    expect((await server.graphql(APP, { id: a.appId }, a.apiKey)).body).toEqual(own);
    expect((await server.graphql(APP, { id: b.appId }, a.apiKey)).body).toEqual({ data: { app: null } });
    const keys = await server.graphql('{ app { id apiKeys { id } } }', {}, a.apiKey);
    expect(errorOf(keys)).toEqual({ message: 'This operation needs the admin token', code: 'FORBIDDEN' });
  });

  it('needs the id with the admin token, and refuses a session', async () => {
    const a = await server.createApp();
    const res = await server.graphql(APP, {}, server.adminToken);
    expect(errorOf(res)).toEqual({ message: 'id: is required for the admin token', code: 'BAD_USER_INPUT' });
    expect((await server.graphql(APP, { id: 'app_missing' }, server.adminToken)).body).toEqual({
      data: { app: null },
    });
    const billing = new BillingFixtures(server, a.appId);
    const token = await billing.session((await billing.customer({ linked: false })).id);
    expect(errorOf(await server.graphql(APP, { id: a.appId }, token)).code).toBe('FORBIDDEN');
  });
});

describe('checkCallbackUrl', () => {
  it("says whether a URL is allowed and by which of the app's patterns", async () => {
    const { appId, apiKey } = await server.createApp({
      allowedCallbackUrls: 'https://app.example.com/auth/*\nhttps://*.example.org:*/cb',
    });
    const check = async (url: string, token = server.adminToken) =>
      (await server.graphql(CHECK, { appId, url }, token)).body;
    expect(await check('https://app.example.com/auth/done?x=1')).toEqual({
      data: { checkCallbackUrl: { allowed: true, matchedPattern: 'https://app.example.com/auth/*' } },
    });
    expect(await check('https://eu.shop.example.org:8443/cb', apiKey)).toEqual({
      data: { checkCallbackUrl: { allowed: true, matchedPattern: 'https://*.example.org:*/cb' } },
    });
    for (const url of ['https://evil.com/auth/x', 'https://user@app.example.com/auth/x', 'not a url']) {
      expect(await check(url)).toEqual({
        data: { checkCallbackUrl: { allowed: false, matchedPattern: null } },
      });
    }
    expect(await check('http://localhost:3000/cb')).toEqual({
      data: { checkCallbackUrl: { allowed: true, matchedPattern: null } },
    });
  });

  it('answers 404 for an unknown app, 401 without a credential', async () => {
    const missing = await server.graphql(
      CHECK,
      { appId: 'app_nope', url: 'https://x.example.com/' },
      server.adminToken,
    );
    expect(errorOf(missing)).toEqual({ message: 'App app_nope not found', code: 'NOT_FOUND' });
    const anonymous = await server.graphql(CHECK, { appId: 'app_nope', url: 'https://x.example.com/' });
    expect(errorOf(anonymous).code).toBe('UNAUTHENTICATED');
  });
});
