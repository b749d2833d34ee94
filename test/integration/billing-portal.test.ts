import { type Browser, chromium } from 'playwright-core';
import { CreateBillingPortalSessionDocument } from '../generated/graphql.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { eventually } from '../helpers/eventually.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `POST /v1/billing-portal/session` and the emulator's customer portal: the link is made through the real
 * SDK, the page is used in Chromium, and what the customer does there reaches Tollgate only through the
 * signed notifications the emulator sends, as Stripe's would.
 */
const RETURN_URL = 'https://app.example.com/account';

let server: TestServer;
let appId: string;
let apiKey: string;
let billing: BillingFixtures;
let basic: Awaited<ReturnType<BillingFixtures['plan']>>;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer();
  ({ appId, apiKey } = await server.createApp({
    organizationsEnabled: true,
    allowedCallbackUrls: 'https://app.example.com/*',
  }));
  billing = new BillingFixtures(server, appId);
  basic = await billing.plan({ slug: 'basic', unitAmount: 1000, features: { sso: false } });
  // A product name that would be markup if the page did not escape it.
  pro = await billing.plan({
    slug: 'pro',
    unitAmount: 3000,
    features: { sso: true },
    productName: 'Pro <img src=x onerror=alert(1)>',
  });
});

afterAll(async () => {
  await server?.close();
});

async function subscribed() {
  const customer = await billing.customer();
  const subscription = await billing.subscription(
    { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
    basic,
  );
  return { customer, ...subscription };
}

const portal = (body: object, token: string = apiKey) =>
  server.http.post('/v1/billing-portal/session').set('authorization', `Bearer ${token}`).send(body);

const current = async (customerId: string) => {
  const res = await server.http
    .get(`/v1/subscriptions/current?customerId=${customerId}`)
    .set('authorization', `Bearer ${apiKey}`);
  return res.body;
};

describe('POST /v1/billing-portal/session', () => {
  it("answers a link to the customer's portal, offering the app's plan prices", async () => {
    const { customer } = await subscribed();
    const res = await portal({ returnUrl: RETURN_URL, customerId: customer.id });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['url']);
    const prefix = `${server.payments.emulator!.url}/portal/`;
    expect(res.body.url.startsWith(prefix)).toBe(true);
    const page = await fetch(res.body.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain(
      `Billing for ${((await billing.stripe.customers.retrieve(customer.stripeCustomerId!)) as { email: string }).email}`,
    );

    // One configuration per app at Stripe, reused by the next session, listing exactly its prices.
    const again = await portal({ returnUrl: RETURN_URL, customerId: customer.id });
    expect(again.status).toBe(200);
    const configurations = (
      await billing.stripe.billingPortal.configurations.list({ limit: 100 })
    ).data.filter((c) => c.metadata?.tollgate_app_id === appId);
    expect(configurations).toHaveLength(1);
    const offered = configurations[0]!.features.subscription_update;
    expect(offered.enabled).toBe(true);
    expect(offered.products!.flatMap((p) => p.prices).sort()).toEqual([basic.price.id, pro.price.id].sort());
  });

  it('lets a customer session open its own portal, only back to an allowed address', async () => {
    const { customer } = await subscribed();
    const token = await billing.session(customer.id);
    expect((await portal({ returnUrl: RETURN_URL }, token)).status).toBe(200);
    const elsewhere = await portal({ returnUrl: 'https://evil.example.net/' }, token);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.message).toBe(
      "returnUrl: must match one of the app's allowed callback URL patterns",
    );
    const naming = await portal({ returnUrl: RETURN_URL, customerId: customer.id }, token);
    expect(naming.status).toBe(400);
    expect(naming.body.message).toBe('unknown field: customerId');
  });

  it('refuses a wrong context: both or neither 400, another app 404, no billing account 409, member 403', async () => {
    const { customer } = await subscribed();
    const both = await portal({ returnUrl: RETURN_URL, customerId: customer.id, organizationId: 'org_x' });
    expect(both.status).toBe(400);
    expect(both.body.message).toBe('exactly one of customerId or organizationId is required');
    expect((await portal({ returnUrl: RETURN_URL })).status).toBe(400);
    expect((await portal({ returnUrl: 'javascript:alert(1)', customerId: customer.id })).status).toBe(400);

    const other = await server.createApp();
    const foreign = await portal({ returnUrl: RETURN_URL, customerId: customer.id }, other.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe(`Customer ${customer.id} not found`);

    const unlinked = await billing.customer({ linked: false });
    const none = await portal({ returnUrl: RETURN_URL, customerId: unlinked.id });
    expect(none.status).toBe(409);
    expect(none.body.message).toBe('There is no billing account yet: start a checkout first');

    const member = await billing.customer();
    const organizationId = await billing.organization([
      { customerId: customer.id, role: 'owner' },
      { customerId: member.id, role: 'member' },
    ]);
    const memberToken = await billing.session(member.id, organizationId);
    expect((await portal({ returnUrl: RETURN_URL }, memberToken)).status).toBe(403);
    // The owner may, but the organization has never checked out.
    const ownerToken = await billing.session(customer.id, organizationId);
    expect((await portal({ returnUrl: RETURN_URL }, ownerToken)).status).toBe(409);
  });

  it('has a GraphQL twin over the same core', async () => {
    const { customer } = await subscribed();
    const res = await server.op(
      CreateBillingPortalSessionDocument,
      { returnUrl: RETURN_URL, customerId: customer.id },
      apiKey,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data?.createBillingPortalSession.url).toMatch(/\/portal\/bps_/);
    const refused = await server.op(CreateBillingPortalSessionDocument, { returnUrl: RETURN_URL }, apiKey);
    expect(refused.body.errors?.[0]).toMatchObject({
      message: 'exactly one of customerId or organizationId is required',
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
    });
  });
});

describeRequiring(chromiumRequirement(CHROMIUM), 'the customer portal in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function openPortal(customerId: string) {
    const res = await portal({ returnUrl: RETURN_URL, customerId });
    expect(res.status).toBe(200);
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    const answer = await page.goto(res.body.url);
    expect(answer?.status()).toBe(200);
    return { page, requests };
  }

  it('switches the plan in the portal, and Tollgate follows through the notification', async () => {
    const { customer, id } = await subscribed();
    const { page, requests } = await openPortal(customer.id);
    try {
      expect(await page.locator(`[data-subscription]`).count()).toBe(1);
      expect(await page.locator('[data-invoice]').count()).toBe(1);
      // The product name is shown as text, never as markup.
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.locator('select[name=price] option').allTextContents()).toEqual([
        'Pro <img src=x onerror=alert(1)> — 30.00 USD / month',
      ]);
      expect(await page.locator('#return').getAttribute('href')).toBe(RETURN_URL);

      await page.selectOption('select[name=price]', pro.price.id);
      await Promise.all([page.waitForURL(/done=update/), page.click('button.switch')]);
      expect(await page.locator('[role=status]').textContent()).toBe('Your plan was updated.');
      // Nothing but the emulator itself was loaded: no third-party asset.
      const origin = new URL(server.payments.emulator!.url).origin;
      expect(requests.every((url) => new URL(url).origin === origin)).toBe(true);
    } finally {
      await page.close();
    }
    const switched = await eventually(
      async () => {
        const body = await current(customer.id);
        return body.plan?.id === 'pro' ? body : undefined;
      },
      { what: 'the plan switch to reach Tollgate' },
    );
    expect(switched).toMatchObject({ id, plan: { id: 'pro' }, status: 'active' });
    const check = await server.http
      .get(`/v1/entitlements/check/sso?customerId=${customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(check.body).toEqual({ feature: 'sso', allowed: true, value: true });
  });

  it('cancels in the portal (at period end), and Tollgate follows through the notification', async () => {
    const { customer, id } = await subscribed();
    const { page } = await openPortal(customer.id);
    try {
      await Promise.all([page.waitForURL(/done=cancel/), page.click('button.cancel')]);
      expect(await page.locator('.status').textContent()).toBe('active');
      expect(await page.locator('button.cancel').count()).toBe(0);
    } finally {
      await page.close();
    }
    const canceled = await eventually(
      async () => {
        const body = await current(customer.id);
        return body.cancelAtPeriodEnd === true ? body : undefined;
      },
      { what: 'the cancellation to reach Tollgate' },
    );
    expect(canceled).toMatchObject({ id, status: 'active', cancelAtPeriodEnd: true });
    expect(canceled.canceledAt).not.toBeNull();
  });

  it('updates the card in the portal: a declined card changes nothing, a good one pays what was past due', async () => {
    const { customer, id, stripeSubscriptionId } = await subscribed();
    server.payments.emulator!.renewSubscription(stripeSubscriptionId, { fail: true });
    await eventually(async () => ((await billing.stored(id)).status === 'past_due' ? true : undefined), {
      what: 'the declined renewal to reach Tollgate',
    });
    const { page } = await openPortal(customer.id);
    try {
      await page.fill('input[name=card_number]', '4000 0000 0000 0002');
      await Promise.all([page.waitForLoadState(), page.click('#update-card')]);
      expect(await page.locator('[role=alert]').textContent()).toBe('Your card was declined.');
      expect((await billing.stripe.subscriptions.retrieve(stripeSubscriptionId)).status).toBe('past_due');

      await page.fill('input[name=card_number]', '4242 4242 4242 4242');
      await Promise.all([page.waitForURL(/done=card/), page.click('#update-card')]);
      expect(await page.locator('[role=status]').textContent()).toBe('Your card was updated.');
      expect(await page.locator('#payment-method code').textContent()).toMatch(/^pm_/);
    } finally {
      await page.close();
    }
    const remote = await billing.stripe.subscriptions.retrieve(stripeSubscriptionId);
    expect(remote.status).toBe('active');
    expect(remote.default_payment_method).toMatch(/^pm_/);
    const invoices = await billing.stripe.invoices.list({ subscription: stripeSubscriptionId });
    expect(invoices.data.map((i) => i.status)).toEqual(['paid', 'paid']);
    await eventually(async () => ((await billing.stored(id)).status === 'active' ? true : undefined), {
      what: 'the paid invoice to reach Tollgate',
    });
    expect((await current(customer.id)).status).toBe('active');
  });
});
