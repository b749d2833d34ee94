import { randomBytes } from 'node:crypto';
import { withContext } from '../../src/db.js';
import { Organization } from '../../src/modules/organizations/organization.entity.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The REST twins of the client operations whose paths the interface leaves open: subscription and
 * invoice history, coupon validation, a customer's organizations, switching organization, signing out.
 * Every answer is checked against schema/openapi.yaml by the test server's HTTP helper.
 */
let server: TestServer;
let appId: string;
let apiKey: string;
let billing: BillingFixtures;
let basic: Awaited<ReturnType<BillingFixtures['plan']>>;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer();
  ({ appId, apiKey } = await server.createApp({ organizationsEnabled: true }));
  billing = new BillingFixtures(server, appId);
  basic = await billing.plan({ slug: 'basic', unitAmount: 900 });
  pro = await billing.plan({ slug: 'pro', unitAmount: 2000 });
});

afterAll(async () => {
  await server?.close();
});

const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** An organization with its own Stripe customer, an owner and a member. */
async function organizationWithMembers() {
  const owner = await billing.customer();
  const member = await billing.customer();
  const organizationId = await billing.organization([
    { customerId: owner.id, role: 'owner' },
    { customerId: member.id, role: 'member' },
  ]);
  const stripeCustomer = await billing.stripe.customers.create({
    email: `org-${randomBytes(4).toString('hex')}@example.com`,
  });
  await withContext(server.deps.orm, async () => {
    const em = server.deps.orm.em;
    const organization = await em.findOneOrFail(Organization, organizationId);
    organization.paymentCustomerId = stripeCustomer.id;
    await em.flush();
  });
  return { owner, member, organizationId, stripeCustomerId: stripeCustomer.id };
}

describe('GET /v1/subscriptions', () => {
  it("lists a customer's history with an API key, canceled included, newest first", async () => {
    const customer = await billing.customer();
    const owner = { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! };
    const first = await billing.subscription(owner, basic, { createdAt: minutesAgo(20) });
    const second = await billing.subscription(owner, pro, { createdAt: minutesAgo(10) });
    const cancel = await server.http
      .post(`/v1/subscriptions/${first.id}/cancel`)
      .set(bearer(apiKey))
      .send({});
    expect(cancel.status).toBe(200);

    const res = await server.http
      .get('/v1/subscriptions')
      .query({ customerId: customer.id })
      .set(bearer(apiKey));
    expect(res.status).toBe(200);
    expect(
      res.body.data.map((s: { id: string; status: string; plan: { id: string } }) => [
        s.id,
        s.status,
        s.plan.id,
      ]),
    ).toEqual([
      [second.id, 'active', 'pro'],
      [first.id, 'canceled', 'basic'],
    ]);
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
  });

  it("gives an organization's history by organizationId, and a switched session its organization's", async () => {
    const { owner, member, organizationId, stripeCustomerId } = await organizationWithMembers();
    const shared = await billing.subscription(
      { customerId: owner.id, stripeCustomerId, organizationId },
      pro,
    );
    const personal = await billing.subscription(
      { customerId: member.id, stripeCustomerId: member.stripeCustomerId! },
      basic,
    );
    const byKey = await server.http.get('/v1/subscriptions').query({ organizationId }).set(bearer(apiKey));
    expect(byKey.body.data.map((s: { id: string }) => s.id)).toEqual([shared.id]);
    const switched = await server.http
      .get('/v1/subscriptions')
      .set(bearer(await billing.session(member.id, organizationId)));
    expect(switched.body.data.map((s: { id: string }) => s.id)).toEqual([shared.id]);
    const alone = await server.http.get('/v1/subscriptions').set(bearer(await billing.session(member.id)));
    expect(alone.body.data.map((s: { id: string }) => s.id)).toEqual([personal.id]);
  });

  it('answers 400 without exactly one context for an API key, 400 for a session naming one, 404 for another app', async () => {
    const customer = await billing.customer({ linked: false });
    const none = await server.http.get('/v1/subscriptions').set(bearer(apiKey));
    expect(none.status).toBe(400);
    expect(none.body).toEqual({
      statusCode: 400,
      message: 'exactly one of customerId or organizationId is required',
      error: 'Bad Request',
    });
    const session = await billing.session(customer.id);
    const named = await server.http
      .get('/v1/subscriptions')
      .query({ customerId: customer.id })
      .set(bearer(session));
    expect(named.status).toBe(400);
    const other = await server.createApp();
    const foreign = await server.http
      .get('/v1/subscriptions')
      .query({ customerId: customer.id })
      .set(bearer(other.apiKey));
    expect(foreign.status).toBe(404);
    expect((await server.http.get('/v1/subscriptions')).status).toBe(401);
  });

  it('GraphQL subscriptions takes the same customerId / organizationId arguments with an API key', async () => {
    const customer = await billing.customer();
    const sub = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      pro,
    );
    const res = await server.graphql(
      'query($c: ID) { subscriptions(customerId: $c) { id status } }',
      { c: customer.id },
      apiKey,
    );
    expect(res.body).toEqual({ data: { subscriptions: [{ id: sub.id, status: 'active' }] } });
  });
});

describe('GET /v1/invoices', () => {
  it("lists a customer's invoices from Stripe with an API key, and a session's own", async () => {
    const customer = await billing.customer();
    await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      pro,
    );
    const atStripe = await billing.stripe.invoices.list({ customer: customer.stripeCustomerId! });
    const expected = atStripe.data.map((invoice) => ({
      id: invoice.id,
      created: new Date(invoice.created * 1000).toISOString(),
      amountPaid: invoice.amount_paid,
      currency: 'usd',
      status: 'paid',
      hostedInvoiceUrl: invoice.hosted_invoice_url,
    }));
    expect(expected).toHaveLength(1);
    const res = await server.http.get('/v1/invoices').query({ customerId: customer.id }).set(bearer(apiKey));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: expected });
    const own = await server.http.get('/v1/invoices').set(bearer(await billing.session(customer.id)));
    expect(own.body).toEqual({ data: expected });
  });

  it("reads an organization's invoices from its own Stripe customer (API key and switched session)", async () => {
    const { owner, member, organizationId, stripeCustomerId } = await organizationWithMembers();
    await billing.subscription({ customerId: owner.id, stripeCustomerId, organizationId }, pro);
    await billing.subscription({ customerId: member.id, stripeCustomerId: member.stripeCustomerId! }, basic);
    const byKey = await server.http.get('/v1/invoices').query({ organizationId }).set(bearer(apiKey));
    expect(byKey.status).toBe(200);
    expect(byKey.body.data.map((i: { amountPaid: number }) => i.amountPaid)).toEqual([2000]);
    const switched = await server.http
      .get('/v1/invoices')
      .set(bearer(await billing.session(member.id, organizationId)));
    expect(switched.body.data.map((i: { amountPaid: number }) => i.amountPaid)).toEqual([2000]);
    const alone = await server.http.get('/v1/invoices').set(bearer(await billing.session(member.id)));
    expect(alone.body.data.map((i: { amountPaid: number }) => i.amountPaid)).toEqual([900]);
    const graphql = await server.graphql(
      'query($o: ID) { invoices(organizationId: $o) { amountPaid } }',
      { o: organizationId },
      apiKey,
    );
    expect(graphql.body).toEqual({ data: { invoices: [{ amountPaid: 2000 }] } });
  });

  it('answers 400 without exactly one context or with a bad limit, 404 for another app', async () => {
    const customer = await billing.customer();
    const both = await server.http
      .get('/v1/invoices')
      .query({ customerId: customer.id, organizationId: 'org_x' })
      .set(bearer(apiKey));
    expect(both.status).toBe(400);
    expect(both.body.message).toBe('exactly one of customerId or organizationId is required');
    const badLimit = await server.http
      .get('/v1/invoices')
      .query({ customerId: customer.id, limit: '0' })
      .set(bearer(apiKey));
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.message).toBe('limit: limit must be an integer between 1 and 100');
    const other = await server.createApp();
    const foreign = await server.http
      .get('/v1/invoices')
      .query({ customerId: customer.id })
      .set(bearer(other.apiKey));
    expect(foreign.status).toBe(404);
  });
});

describe('POST /v1/coupons/validate', () => {
  it('answers valid for a live code, valid: false with the reason otherwise, 404 for an unknown plan', async () => {
    const coupon = await billing.stripe.coupons.create({ percent_off: 20 });
    const code = `SAVE${randomBytes(4).toString('hex').toUpperCase()}`;
    await billing.stripe.promotionCodes.create({
      promotion: { type: 'coupon', coupon: coupon.id },
      code,
    } as never);
    const ok = await server.http
      .post('/v1/coupons/validate')
      .set(bearer(apiKey))
      .send({ code, planId: 'pro' });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ valid: true });
    const unknown = await server.http
      .post('/v1/coupons/validate')
      .set(bearer(apiKey))
      .send({ code: 'NOPE-NOT-A-CODE', planId: 'pro' });
    expect(unknown.body).toEqual({ valid: false, reason: 'Coupon code not found' });
    const noPlan = await server.http
      .post('/v1/coupons/validate')
      .set(bearer(apiKey))
      .send({ code, planId: 'no-such-plan' });
    expect(noPlan.status).toBe(404);
    const extra = await server.http
      .post('/v1/coupons/validate')
      .set(bearer(apiKey))
      .send({ code, planId: 'pro', other: 1 });
    expect(extra.status).toBe(400);
  });

  it("spends GraphQL validateCoupon's budget: 30 calls a minute per caller across both APIs", async () => {
    const app = await server.createApp();
    const fx = new BillingFixtures(server, app.appId);
    await fx.plan({ slug: 'pro' });
    const rest = () =>
      server.http.post('/v1/coupons/validate').set(bearer(app.apiKey)).send({ code: 'X', planId: 'pro' });
    for (let i = 0; i < 15; i++) expect((await rest()).status).toBe(200);
    for (let i = 0; i < 15; i++) {
      const res = await server.graphql(
        '{ validateCoupon(code: "X", planId: "pro") { valid } }',
        {},
        app.apiKey,
      );
      expect(res.body.errors).toBeUndefined();
    }
    const refused = await rest();
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.body).toEqual({
      statusCode: 429,
      message: 'Rate limit exceeded for validateCoupon: at most 30 calls per 60 seconds',
      error: 'Too Many Requests',
    });
    const viaGraphql = await server.graphql(
      '{ validateCoupon(code: "X", planId: "pro") { valid } }',
      {},
      app.apiKey,
    );
    expect(viaGraphql.body.errors?.[0].extensions).toMatchObject({ statusCode: 429 });
  });
});

describe('GET /v1/organizations', () => {
  it("lists a customer's organizations with an API key and a session's own", async () => {
    const { owner, organizationId } = await organizationWithMembers();
    const res = await server.http
      .get('/v1/organizations')
      .query({ customerId: owner.id })
      .set(bearer(apiKey));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          id: organizationId,
          name: 'Acme',
          metadata: {},
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ],
    });
    const own = await server.http.get('/v1/organizations').set(bearer(await billing.session(owner.id)));
    expect(own.body).toEqual(res.body);
    const missing = await server.http.get('/v1/organizations').set(bearer(apiKey));
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe('customerId: is required with an API key');
  });

  it('answers 403 when the app has not enabled organizations', async () => {
    const app = await server.createApp();
    const customer = await new BillingFixtures(server, app.appId).customer({ linked: false });
    const res = await server.http
      .get('/v1/organizations')
      .query({ customerId: customer.id })
      .set(bearer(app.apiKey));
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('Organizations are not enabled for this app');
  });
});

describe('POST /v1/apps/:appId/auth/switch-organization and …/sign-out', () => {
  it('switches to an organization: a new token beside its session object', async () => {
    const { member, organizationId } = await organizationWithMembers();
    const token = await billing.session(member.id);
    const res = await server.http
      .post(`/v1/apps/${appId}/auth/switch-organization`)
      .set(bearer(token))
      .send({ organizationId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_/),
      customer: { id: member.id, email: expect.any(String), name: null, metadata: {} },
      entitlements: { planName: null, features: {} },
      organizationId,
      orgRole: 'member',
    });
    const session = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set(bearer(res.body.sessionToken));
    expect(session.body).toMatchObject({ organizationId, orgRole: 'member' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('refuses an organization the customer is not in (404), an API key (403), a token of another app (401)', async () => {
    const { organizationId } = await organizationWithMembers();
    const outsider = await billing.customer({ linked: false });
    const token = await billing.session(outsider.id);
    const path = `/v1/apps/${appId}/auth/switch-organization`;
    expect((await server.http.post(path).set(bearer(token)).send({ organizationId })).status).toBe(404);
    expect((await server.http.post(path).set(bearer(apiKey)).send({ organizationId })).status).toBe(403);
    const other = await server.createApp();
    const foreign = await server.http
      .post(`/v1/apps/${other.appId}/auth/switch-organization`)
      .set(bearer(token))
      .send({ organizationId });
    expect(foreign.status).toBe(401);
    expect((await server.http.post(path).set(bearer(token)).send({})).status).toBe(400);
  });

  it('signs out: the token is refused from then on', async () => {
    const customer = await billing.customer({ linked: false });
    const token = await billing.session(customer.id);
    const session = `/v1/apps/${appId}/auth/session`;
    expect((await server.http.get(session).set(bearer(token))).status).toBe(200);
    const res = await server.http.post(`/v1/apps/${appId}/auth/sign-out`).set(bearer(token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const after = await server.http.get(session).set(bearer(token));
    expect(after.status).toBe(401);
    expect((await server.http.post(`/v1/apps/${appId}/auth/sign-out`).set(bearer(apiKey))).status).toBe(403);
  });
});
