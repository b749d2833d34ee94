import { CHROMIUM } from '../helpers/chromium.js';
import {
  countIs,
  DashboardBrowser,
  DESKTOP,
  disabled,
  PHONE,
  showsText,
  sidewaysOverflow,
  visible,
} from '../helpers/dashboard-browser.js';
import { eventually } from '../helpers/eventually.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, stripeFor } from '../helpers/stripe-fixtures.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * An operator's weekly work through the dashboard in Chromium: customers created, edited and deleted,
 * a subscription moved to another plan after its proration preview and canceled at the period end,
 * plans priced from an amount and archived, webhook endpoints edited, disabled, tested, rotated and
 * deleted, API keys named; each effect read back through the API. Then every page on a phone without
 * sideways scrolling. No request leaves the origin, no script fails, no file is missing (the favicon).
 */

describeRequiring(chromiumRequirement(CHROMIUM), "the dashboard's everyday actions in a browser", () => {
  let server: TestServer;
  let browser: DashboardBrowser;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    server = await startTestServer();
    browser = await DashboardBrowser.launch(server);
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
    await browser?.close();
    await server?.close();
  });
  afterEach(() => browser.check());

  async function customerOf(apiKey: string, id: string) {
    return server.http.get(`/v1/customers/${id}`).set('authorization', `Bearer ${apiKey}`);
  }

  /** A customer with a paid subscription to `planId`: Tollgate's checkout, paid on the emulator's page. */
  async function subscribedCustomer(apiKey: string, planId: string) {
    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: `sub-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com` });
    expect(created.status).toBe(201);
    const customerId = created.body.id as string;
    const checkout = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({
        planId,
        customerId,
        successUrl: 'https://app.example.com/thanks',
        cancelUrl: 'https://app.example.com/pricing',
      });
    expect(checkout.status).toBe(200);
    expect((await payOnHostedPage(checkout.body.url)).status).toBe(303);
    const subscription = await eventually(
      async () => {
        const res = await server.http
          .get('/v1/subscriptions/current')
          .query({ customerId })
          .set('authorization', `Bearer ${apiKey}`);
        return res.status === 200 ? res.body : undefined;
      },
      { what: 'the paid subscription' },
    );
    return { customerId, subscription, email: created.body.email as string };
  }

  it('creates a customer, edits its name and metadata, and deletes it after the erasure warning', async () => {
    const { appId, apiKey } = await server.createApp();
    const email = `new-${Date.now()}@example.com`;
    const { page } = await browser.open();
    await browser.signIn(page, `#/apps/${appId}/customers`);
    await page.getByRole('button', { name: 'New customer' }).click();
    await page.getByLabel('E-mail', { exact: true }).fill(email);
    await page.getByLabel('Name', { exact: true }).fill('Ada');
    await browser.shoot(page, 'customer-new');
    await page.getByRole('button', { name: 'Create customer' }).click();
    await visible(page.getByRole('heading', { name: email }));
    const customerId = decodeURIComponent(new URL(page.url()).hash.split('/').pop()!);
    const created = await customerOf(apiKey, customerId);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ email, name: 'Ada', metadata: {} });

    // The same e-mail again is refused by the API, in its words.
    await page.goto(`${server.url}/dashboard#/apps/${appId}/customers`);
    await page.getByRole('button', { name: 'New customer' }).click();
    await page.getByLabel('E-mail', { exact: true }).fill(email.toUpperCase());
    await page.getByRole('button', { name: 'Create customer' }).click();
    await visible(page.getByText(`A customer with e-mail ${email.toUpperCase()} already exists`));
    await page.goto(`${server.url}/dashboard#/apps/${appId}/customers/${customerId}`);

    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Name', { exact: true }).fill('Ada Lovelace');
    for (const [key, value] of [
      ['tier', '"gold"'],
      ['seats', '3'],
      ['note', 'plain words'],
      ['limits', '{"projects": 10}'],
    ]) {
      await page.getByRole('button', { name: 'Add metadata' }).click();
      const n = await page.getByLabel(/^Metadata \d+ key$/).count();
      await page.getByLabel(`Metadata ${n} key`).fill(key!);
      await page.getByLabel(`Metadata ${n} value`).fill(value!);
    }
    await browser.shoot(page, 'customer-edit');
    // The profile's reload after the save is held, to see that the editor waits for it: opened on the
    // profile still shown, it would start without the metadata just saved.
    let releaseReload!: () => void;
    const reloadHeld = new Promise<void>((resolve) => {
      releaseReload = resolve;
    });
    let holding = true;
    await page.route('**/graphql', async (route) => {
      if (holding && route.request().postData()?.includes('query DashboardCustomer(')) {
        holding = false;
        await reloadHeld;
      }
      return route.fallback();
    });
    await page.getByRole('button', { name: 'Save profile' }).click();
    await visible(page.getByText('Profile saved.'));
    expect((await customerOf(apiKey, customerId)).body).toMatchObject({
      name: 'Ada Lovelace',
      metadata: { tier: 'gold', seats: 3, note: 'plain words', limits: { projects: 10 } },
    });
    expect(holding).toBe(false);
    expect(await page.getByRole('button', { name: 'Edit', exact: true }).isDisabled()).toBe(true);
    releaseReload();

    // A removed row removes its key; clearing the name clears it.
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const keys = await page
      .getByLabel(/^Metadata \d+ key$/)
      .evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value));
    expect([...keys].sort()).toEqual(['limits', 'note', 'seats', 'tier']);
    const tier = keys.indexOf('tier') + 1;
    expect(await page.getByLabel(`Metadata ${tier} value`).inputValue()).toBe('"gold"');
    await page.getByRole('button', { name: `Remove metadata ${tier}` }).click();
    await page.getByLabel('Name', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await eventually(
      async () => {
        const body = (await customerOf(apiKey, customerId)).body;
        return body.name === null ? body : undefined;
      },
      { what: 'the name to be cleared' },
    );
    expect((await customerOf(apiKey, customerId)).body.metadata).toEqual({
      seats: 3,
      note: 'plain words',
      limits: { projects: 10 },
    });

    // Delete: keeping it changes nothing; confirming erases it.
    const remove = page.getByRole('button', { name: 'Delete customer' });
    await remove.click();
    await page.getByRole('dialog').getByRole('button', { name: 'Keep customer' }).click();
    expect((await customerOf(apiKey, customerId)).status).toBe(200);
    await remove.click();
    await showsText(page.getByRole('dialog'), 'their personal data is erased');
    await browser.shoot(page, 'customer-delete-confirm');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete customer' }).click();
    await visible(page.getByRole('heading', { name: 'Customers' }));
    expect((await customerOf(apiKey, customerId)).status).toBe(404);
  });

  it('moves a subscription to another plan after showing the proration, cancels it at the period end and resumes it', async () => {
    const { appId, apiKey } = await server.createApp();
    await createPaidPlan(server, appId, { id: 'basic', name: 'Basic', unitAmount: 1_000 });
    const pro = await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', unitAmount: 3_000 });
    const { customerId, subscription, email } = await subscribedCustomer(apiKey, 'basic');
    const stripe = stripeFor(server);
    const current = async () =>
      (
        await server.http
          .get('/v1/subscriptions/current')
          .query({ customerId })
          .set('authorization', `Bearer ${apiKey}`)
      ).body;

    const { page } = await browser.open();
    await browser.signIn(page, `#/apps/${appId}/customers/${customerId}`);
    await visible(page.getByRole('heading', { name: email }));
    await page.getByRole('button', { name: `Change plan of subscription ${subscription.id}` }).click();
    await page.getByLabel('New plan').selectOption('pro');
    const preview = await server.graphql(
      `query($appId: ID!, $id: ID!) { previewSubscriptionPlanChange(appId: $appId, id: $id, planId: "pro") {
        amount currency } }`,
      { appId, id: subscription.id },
      server.adminToken,
    );
    const { amount, currency } = preview.body.data.previewSubscriptionPlanChange;
    expect(amount).toBeGreaterThan(0);
    await showsText(
      page.locator('.preview'),
      `Charged for the rest of this period: ${(amount / 100).toFixed(2)} ${currency.toUpperCase()}.`,
    );
    await browser.shoot(page, 'customer-plan-change');
    await page.getByRole('button', { name: 'Change plan', exact: true }).click();
    await visible(page.getByText(`Subscription ${subscription.id} moved to another plan.`));
    expect((await current()).plan).toEqual({ id: 'pro', name: 'Pro' });
    const stripeCustomer = (await customerOf(apiKey, customerId)).body.paymentCustomerId;
    const [remote] = (await stripe.subscriptions.list({ customer: stripeCustomer })).data;
    expect(remote?.items.data[0]?.price.id).toBe(pro.priceId);

    // Cancel asks which: dismissing keeps it; "at period end" keeps it running until then.
    const cancel = page.getByRole('button', { name: `Cancel subscription ${subscription.id}` });
    await cancel.click();
    const dialog = page.getByRole('dialog');
    await visible(dialog.getByRole('button', { name: 'Cancel subscription now' }));
    await browser.shoot(page, 'customer-cancel-choice');
    await dialog.getByRole('button', { name: 'Keep subscription' }).click();
    expect(await current()).toMatchObject({ status: 'active', cancelAtPeriodEnd: false });
    await cancel.click();
    await dialog.getByRole('button', { name: 'Cancel at period end' }).click();
    await showsText(page.getByRole('table', { name: 'Subscription history' }), '(cancels at period end)');
    expect(await current()).toMatchObject({ id: subscription.id, status: 'active', cancelAtPeriodEnd: true });
    expect((await stripe.subscriptions.retrieve(remote!.id)).cancel_at_period_end).toBe(true);

    await page.getByRole('button', { name: `Resume subscription ${subscription.id}` }).click();
    await dialog.getByRole('button', { name: 'Resume subscription' }).click();
    await countIs(page.getByText('(cancels at period end)'), 0);
    expect(await current()).toMatchObject({ status: 'active', cancelAtPeriodEnd: false });
    expect((await stripe.subscriptions.retrieve(remote!.id)).cancel_at_period_end).toBe(false);
    await browser.shoot(page, 'customer');
  });

  it("creates a plan's price from an amount, shows it, and archives the plan so checkout refuses it", async () => {
    const { appId, apiKey } = await server.createApp();
    const { page } = await browser.open();
    await browser.signIn(page, `#/apps/${appId}/plans`);
    await page.getByRole('button', { name: 'New plan' }).click();
    await page.getByLabel('Plan ID').fill('starter');
    await page.getByLabel('Plan name').fill('Starter');
    await page.getByLabel('Amount').fill('12.5');
    await page.getByLabel('Currency').fill('eur');
    await page.getByLabel('Billing interval').selectOption('year');
    await browser.shoot(page, 'plan-form-amount');
    await page.getByRole('button', { name: 'Save plan' }).click();
    await visible(page.getByText('Plan starter saved.'));
    const row = page.locator('tr[data-plan="starter"]');
    await showsText(row, '12.50 EUR / year');

    const plans = async () =>
      (
        await server.graphql(
          `query($appId: ID!) { plans(appId: $appId) { id stripePriceId archived
            price { unitAmount currency interval intervalCount } } }`,
          { appId },
          server.adminToken,
        )
      ).body.data.plans;
    const [plan] = await plans();
    expect(plan).toEqual({
      id: 'starter',
      stripePriceId: expect.stringMatching(/^price_/),
      archived: false,
      price: { unitAmount: 1250, currency: 'eur', interval: 'year', intervalCount: 1 },
    });
    const atStripe = await stripeFor(server).prices.retrieve(plan.stripePriceId);
    expect(atStripe).toMatchObject({ unit_amount: 1250, currency: 'eur', recurring: { interval: 'year' } });

    const checkout = () =>
      server.http.post('/v1/checkout/session').set('authorization', `Bearer ${apiKey}`).send({
        planId: 'starter',
        email: 'buyer@example.com',
        successUrl: 'https://app.example.com/thanks',
        cancelUrl: 'https://app.example.com/pricing',
      });
    expect((await checkout()).status).toBe(200);

    await page.getByRole('button', { name: 'Archive plan starter' }).click();
    await showsText(page.getByRole('dialog'), 'subscriptions already on it keep it');
    await page.getByRole('dialog').getByRole('button', { name: 'Archive plan' }).click();
    await visible(page.getByText('Plan starter archived.'));
    await showsText(row, 'archived');
    expect((await plans())[0].archived).toBe(true);
    const refused = await checkout();
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/archived/);
    await browser.shoot(page, 'plans');

    await page.getByRole('button', { name: 'Restore plan starter' }).click();
    await visible(page.getByText('Plan starter restored.'));
    expect((await plans())[0].archived).toBe(false);
    expect((await checkout()).status).toBe(200);
  });

  it('edits, disables, tests, rotates and deletes a webhook endpoint, showing each request and answer', async () => {
    const { appId } = await server.createApp();
    const endpoints = async () =>
      (
        await server.graphql(
          'query($appId: ID!) { webhookEndpoints(appId: $appId) { id url description events enabled } }',
          { appId },
          server.adminToken,
        )
      ).body.data.webhookEndpoints;
    const url = `${receiver.url}/hooks/${appId}`;
    const { page } = await browser.open();
    await browser.signIn(page, `#/apps/${appId}/webhooks`);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill(url);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secretBox = page.getByRole('textbox', { name: 'Signing secret' });
    const secret = await secretBox.inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    const [endpoint] = await endpoints();

    // Edit: events and description, read back through the API.
    await page.getByRole('button', { name: `Edit endpoint ${url}` }).click();
    await page.getByLabel('Description').fill('Billing sync');
    await page.getByLabel('Event types').fill('customer.created, subscription.updated');
    await page.getByRole('button', { name: 'Save endpoint' }).click();
    await visible(page.getByText(`Endpoint ${url} saved.`));
    expect(await endpoints()).toEqual([
      {
        id: endpoint.id,
        url,
        description: 'Billing sync',
        events: ['customer.created', 'subscription.updated'],
        enabled: true,
      },
    ]);

    // A test event goes to this endpoint even though it takes other types, signed like any event.
    const testOnes = () => receiver.received.filter((r) => r.path === `/hooks/${appId}`);
    await page.getByRole('button', { name: `Send a test event to ${url}` }).click();
    const [received] = await eventually(() => (testOnes().length === 1 ? testOnes() : undefined), {
      what: 'the test event at the receiver',
    });
    expect(received!.payload).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
    expect(verify(secret, received!)).toMatchObject({ type: 'webhook.test' });
    const deliveries = async () =>
      (
        await server.graphql(
          `query($id: ID!) { webhookDeliveries(endpointId: $id) { id eventId eventType status requestBody
            attemptLog { statusCode excerpt requestHeaders } } }`,
          { id: endpoint.id },
          server.adminToken,
        )
      ).body.data.webhookDeliveries;
    const [delivery] = await eventually(
      async () => {
        const list = await deliveries();
        return list[0]?.status === 'succeeded' ? list : undefined;
      },
      { what: 'the test delivery to succeed' },
    );
    expect(delivery).toMatchObject({ eventType: 'webhook.test', requestBody: received!.body });
    expect(delivery.attemptLog[0]).toMatchObject({ statusCode: 200, excerpt: 'ok' });
    expect(delivery.attemptLog[0].requestHeaders['webhook-signature']).toBe(
      received!.headers['webhook-signature'],
    );
    const status = page.locator(`[data-delivery="${delivery.id}"]`);
    await page.getByRole('button', { name: `Refresh deliveries to ${url}` }).click();
    await showsText(status, 'succeeded');
    // A delivery that succeeded has nothing to retry.
    await countIs(page.getByRole('button', { name: `Retry delivery ${delivery.id}` }), 0);
    await page.getByText('Request and answer').click();
    const exchange = page.locator('details.exchange');
    await showsText(exchange, `webhook-id: ${delivery.eventId}`);
    await showsText(exchange, `webhook-signature: ${received!.headers['webhook-signature']}`);
    await showsText(exchange, '"type":"webhook.test"');
    await showsText(exchange, '200 in');
    await browser.shoot(page, 'webhooks');

    // Disabled: the API says so and a test cannot be sent; enabled again.
    await page.getByRole('button', { name: `Disable endpoint ${url}` }).click();
    await visible(page.getByText(`Endpoint ${url} disabled.`));
    expect((await endpoints())[0].enabled).toBe(false);
    await disabled(page.getByRole('button', { name: `Send a test event to ${url}` }));
    await page.getByRole('button', { name: `Enable endpoint ${url}` }).click();
    await visible(page.getByText(`Endpoint ${url} enabled.`));
    expect((await endpoints())[0].enabled).toBe(true);

    // Rotation shows the new secret once; the next event is signed with it.
    await page.getByRole('button', { name: `Rotate the secret of ${url}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await secretBox.inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await browser.shoot(page, 'webhooks-rotated-secret');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await countIs(secretBox, 0);
    await page.getByRole('button', { name: `Send a test event to ${url}` }).click();
    const second = await eventually(() => testOnes()[1], { what: 'the second test event' });
    expect(verify(rotated, second)).toMatchObject({ type: 'webhook.test' });
    await page.reload();
    await visible(page.getByRole('heading', { name: 'Webhook endpoints' }));
    await countIs(secretBox, 0);

    await page.getByRole('button', { name: `Delete endpoint ${url}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete endpoint' }).click();
    await visible(page.getByText('No webhook endpoints.'));
    expect(await endpoints()).toEqual([]);
  });

  it('names an API key when creating it', async () => {
    const { appId } = await server.createApp();
    const { page } = await browser.open();
    await browser.signIn(page, `#/apps/${appId}/keys`);
    await page.getByLabel('Key name').fill('billing worker');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = await page.getByRole('textbox', { name: 'New API key' }).inputValue();
    const row = page.getByRole('table', { name: 'API keys' }).getByRole('row', { name: /billing worker/ });
    await countIs(row, 1);
    const keys = await server.graphql(
      'query($id: ID!) { app(id: $id) { apiKeys { name prefix } } }',
      { id: appId },
      server.adminToken,
    );
    expect(keys.body.data.app.apiKeys).toContainEqual({
      name: 'billing worker',
      prefix: secret.slice(0, 12),
    });
    await browser.shoot(page, 'app-keys-named');
  });

  // Twenty-two page loads, each with a screenshot, and a checkout: about 15 s on a quiet 2-core machine,
  // over 30 s on a loaded one, so it gets a bound of its own.
  it('shows every page on a phone without sideways scrolling, and on a desktop, with its favicon', async () => {
    const { appId, apiKey } = await server.createApp({ organizationsEnabled: true });
    await createPaidPlan(server, appId, {
      id: 'team-with-a-long-plan-id',
      name: 'Team plan with a long name',
      features: { seats: 5, projects: 100, support: 'priority e-mail and chat' },
    });
    const { customerId } = await subscribedCustomer(apiKey, 'team-with-a-long-plan-id');
    const org = await server.graphql(
      'mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { id } }',
      { input: { name: 'Analytical Engines Ltd', ownerCustomerId: customerId } },
      apiKey,
    );
    const organizationId = org.body.data.createOrganization.id;
    const created = await server.graphql(
      `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }`,
      {
        input: {
          appId,
          url: `${receiver.url}/a/rather/long/path/for/the/phone/${appId}`,
          events: ['customer.created', 'customer.updated', 'subscription.created', 'subscription.updated'],
        },
      },
      server.adminToken,
    );
    const endpointId = created.body.data.createWebhookEndpoint.endpoint.id;
    await server.graphql(
      'mutation($id: ID!) { sendWebhookTestEvent(id: $id) { id } }',
      { id: endpointId },
      server.adminToken,
    );
    await eventually(() => receiver.received.find((r) => r.path.endsWith(appId)), { what: 'a delivery' });

    const pages: [string, string, string][] = [
      ['apps', '#/', 'Apps'],
      ['settings', `#/apps/${appId}/settings`, 'Settings'],
      ['keys', `#/apps/${appId}/keys`, 'API keys'],
      ['plans', `#/apps/${appId}/plans`, 'Plans'],
      ['customers', `#/apps/${appId}/customers`, 'Customers'],
      ['customer', `#/apps/${appId}/customers/${customerId}`, 'Current subscription'],
      ['organization', `#/apps/${appId}/organizations/${organizationId}`, 'Analytical Engines Ltd'],
      ['webhooks', `#/apps/${appId}/webhooks`, 'Webhook endpoints'],
      ['analytics', `#/apps/${appId}/analytics`, 'Analytics'],
      ['audit', '#/audit', 'Audit log'],
      ['operators', '#/operators', 'Operators'],
    ];
    const scrolling: { page: string; overflow: number; culprits: string[] }[] = [];
    for (const [viewport, suffix] of [
      [PHONE, 'phone'],
      [DESKTOP, 'desktop'],
    ] as const) {
      const { page } = await browser.open(viewport);
      await page.goto(`${server.url}/dashboard`);
      await visible(page.getByLabel('Admin token'));
      await browser.shoot(page, `all-sign-in-${suffix}`);
      await browser.signIn(page);
      for (const [name, hash, heading] of pages) {
        await page.goto(`${server.url}/dashboard${hash}`);
        await visible(page.getByRole('heading', { name: heading, exact: true }).first());
        await countIs(page.locator('.loading'), 0);
        if (name === 'webhooks') await page.getByText('Request and answer').click();
        if (viewport === PHONE) {
          expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
          const { overflow, culprits } = await sidewaysOverflow(page);
          if (overflow > 0) scrolling.push({ page: name, overflow, culprits });
        }
        await browser.shoot(page, `all-${name}-${suffix}`);
      }
    }
    // Nor does anything inside a page scroll sideways (a table in a scrolling box, tabs off screen).
    expect(scrolling).toEqual([]);
    // The favicon the page names is served (a missing one fails `check`, as any 404 of the page would).
    const icon = await server.http.get('/dashboard').expect(200);
    const href = /<link rel="icon" href="([^"]+)"/.exec(icon.text)?.[1];
    expect(href).toBeDefined();
    const favicon = await server.http.get(href!);
    expect(favicon.status).toBe(200);
    expect(favicon.headers['content-type']).toMatch(/^image\/svg\+xml/);
  }, 90_000);
});
