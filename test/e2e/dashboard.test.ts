import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { eventually } from '../helpers/eventually.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, sessionTokenFor, stripeFor } from '../helpers/stripe-fixtures.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The dashboard in a real browser (Debian's Chromium): an operator signs in with the admin token and
 * does through the page what would otherwise take hand-written GraphQL. Every effect is checked
 * through the API, every page is watched for requests leaving the origin and for script errors (a CSP
 * violation included), and the main pages are saved as screenshots under test-results/dashboard/.
 */

const SCREENSHOTS = path.resolve(import.meta.dirname, '../../test-results/dashboard');
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const APP_SETTINGS = `query($id: ID!) { app(id: $id) { settings {
  autoCreateCustomer magicLinkExpiryMinutes allowedCallbackUrls customVerificationUrl trialPaymentMethod
  organizationsEnabled sessionTtlSeconds } } }`;

/** How long a page may take to show what a step waits for (generous: the machine may be busy). */
const STEP_TIMEOUT_MS = 15_000;

async function visible(locator: Locator): Promise<void> {
  await locator.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
}

function matches(actual: string, expected: string | RegExp, exact: boolean): boolean {
  if (typeof expected !== 'string') return expected.test(actual);
  return exact ? actual === expected : actual.includes(expected);
}

/** Waits until the element's text is `expected` (or contains it, `exact: false`). */
async function hasText(locator: Locator, expected: string | RegExp, exact = true): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      const count = await locator.count();
      last = count === 1 ? (await locator.innerText()).replace(/\s+/g, ' ').trim() : `(${count} elements)`;
      return matches(last, expected, exact) || undefined;
    },
    { timeoutMs: STEP_TIMEOUT_MS, what: `text ${String(expected)} (last seen: ${JSON.stringify(last)})` },
  );
}

const containsText = (locator: Locator, expected: string | RegExp) => hasText(locator, expected, false);

async function hasCount(locator: Locator, count: number): Promise<void> {
  await eventually(async () => (await locator.count()) === count || undefined, {
    timeoutMs: STEP_TIMEOUT_MS,
    what: `${count} matching elements`,
  });
}

/** The text of the elements named by the control's aria-describedby: what a screen reader reads out. */
async function description(locator: Locator): Promise<string> {
  return locator.evaluate((element) =>
    (element.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' '),
  );
}

async function markedInvalid(locator: Locator): Promise<void> {
  await eventually(async () => (await locator.getAttribute('aria-invalid')) === 'true' || undefined, {
    timeoutMs: STEP_TIMEOUT_MS,
    what: 'the field to be marked invalid',
  });
}

async function describedAs(locator: Locator, expected: string | RegExp): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      last = await description(locator);
      return matches(last, expected, false) || undefined;
    },
    {
      timeoutMs: STEP_TIMEOUT_MS,
      what: `description ${String(expected)} (last seen: ${JSON.stringify(last)})`,
    },
  );
}

interface Session {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Requests to anywhere but this Tollgate (refused, and listed here). */
  readonly foreign: string[];
  /** Uncaught script errors and console errors (CSP violations are reported there). */
  readonly problems: string[];
}

describeRequiring(chromiumRequirement(CHROMIUM), 'the app dashboard in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  const sessions: Session[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    server = await startTestServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  afterEach(async () => {
    for (const session of sessions.splice(0)) {
      // Nothing left the origin and no script failed, whatever the test did.
      expect(session.foreign).toEqual([]);
      expect(session.problems).toEqual([]);
      await session.context.close();
    }
  });

  async function open(viewport = DESKTOP): Promise<Session> {
    const context = await browser.newContext({ viewport });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    const page = await context.newPage();
    const foreign: string[] = [];
    const problems: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${server.url}/`)) return route.continue();
      foreign.push(url);
      return route.abort();
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      // An HTTP error answer is logged by the browser too; those are expected answers, checked by the steps.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        problems.push(`console: ${message.text()}`);
    });
    const session = { context, page, foreign, problems };
    sessions.push(session);
    return session;
  }

  async function signIn(page: Page, hash = ''): Promise<void> {
    await page.goto(`${server.url}/dashboard${hash}`);
    await page.getByLabel('Admin token').fill(server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('button', { name: 'Sign out' }));
  }

  async function shoot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  async function settingsOf(appId: string) {
    const res = await server.graphql(APP_SETTINGS, { id: appId }, server.adminToken);
    return res.body.data.app.settings;
  }

  async function createCustomer(apiKey: string, email: string): Promise<string> {
    const res = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  function customersAnswer(apiKey: string) {
    return server.http.get('/v1/customers').set('authorization', `Bearer ${apiKey}`);
  }

  it('refuses a wrong token, then signs in; the token stays out of URLs and cookies', async () => {
    const { page, context } = await open();
    await page.goto(`${server.url}/dashboard`);
    await shoot(page, 'sign-in');
    await page.getByLabel('Admin token').fill('tg_admin_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByText('That admin token is not valid.'));
    await page.getByLabel('Admin token').fill('tg_sk_unknown');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByText('That API key is not valid.'));
    // A customer session token is a valid credential, but not one for the dashboard.
    const { appId, apiKey } = await server.createApp();
    const customerId = await createCustomer(apiKey, `session-${Date.now()}@example.com`);
    await page.getByLabel('Admin token').fill(await sessionTokenFor(server, appId, customerId));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByText(/This credential cannot open the dashboard/));

    await page.getByLabel('Admin token').fill(server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Apps' }));
    expect(page.url()).not.toContain(server.adminToken);
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => sessionStorage.getItem('tollgate.dashboard.token'))).toBe(
      server.adminToken,
    );
    await page.getByRole('button', { name: 'Sign out' }).click();
    await visible(page.getByLabel('Admin token'));
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('signs out with a reason when the stored token is refused, and says so for an unknown customer', async () => {
    const { appId } = await server.createApp();
    const { page, context } = await open();
    await signIn(page, `#/apps/${appId}/customers/cus_missing`);
    await hasText(page.getByRole('alert'), 'Customer cus_missing not found');
    // The operator's token changed (e.g. a restart with a new ADMIN_TOKEN): the next request signs out.
    await context.addInitScript(() => sessionStorage.setItem('tollgate.dashboard.token', 'tg_admin_stale'));
    await page.reload();
    await hasText(page.getByRole('status'), 'The admin token was refused: sign in again.');
    await visible(page.getByLabel('Admin token'));
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('shows the list of apps for a malformed URL hash, without an error in the page', async () => {
    const { page, problems } = await open();
    await signIn(page, '#/apps/%E0%A4%A');
    await visible(page.getByRole('heading', { name: 'Apps' }));
    expect(problems).toEqual([]);
  });

  it('creates an app and shows its first API key once, and never again', async () => {
    const { page } = await open();
    await signIn(page);
    const name = `Dashboard app ${Date.now()}`;
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByRole('button', { name: 'Create', exact: true }).click();

    await visible(page.getByRole('heading', { name, level: 1 }));
    await visible(page.getByText('Shown once.'));
    await visible(page.getByRole('button', { name: 'Copy' }));
    const secret = await page.getByRole('textbox', { name: 'First API key' }).inputValue();
    expect(secret).toMatch(/^tg_sk_/);
    expect(page.url()).not.toContain(secret);
    expect((await customersAnswer(secret)).status).toBe(200);
    await shoot(page, 'app-created-key-shown-once');

    const appId = /#\/apps\/([^/]+)/.exec(page.url())![1]!;
    const listed = await server.graphql('{ apps { id name } }', {}, server.adminToken);
    expect(listed.body.data.apps).toContainEqual({ id: appId, name });

    // Another section, the app list and back, and a reload: the key is gone each time.
    await page.getByRole('link', { name: 'API keys' }).click();
    await visible(page.getByRole('heading', { name: 'API keys' }));
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await hasCount(page.getByRole('textbox', { name: 'First API key' }), 0);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Apps' }).click();
    await page.getByRole('link', { name }).click();
    await visible(page.getByRole('heading', { name, level: 1 }));
    await page.reload();
    await visible(page.getByRole('heading', { name, level: 1 }));
    await hasCount(page.getByRole('textbox', { name: 'First API key' }), 0);
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Apps' }).click();
    await visible(page.getByRole('link', { name }));
    await shoot(page, 'apps');
  });

  it('changes each setting, seen through the API, and shows validation errors beside their field', async () => {
    const { appId } = await server.createApp();
    const { page } = await open();
    await signIn(page, `#/apps/${appId}/settings`);
    await visible(page.getByRole('heading', { name: 'Settings' }));
    const before = await settingsOf(appId);

    await page.getByLabel('Auto-create customers').setChecked(!before.autoCreateCustomer);
    await page.getByLabel('Magic-link expiry (minutes)').fill('42');
    await page
      .getByLabel('Allowed callback URLs')
      .fill('https://app.example.com/auth/*\nhttps://*.example.org:*/callback');
    await page.getByLabel('Custom verification URL').fill('https://app.example.com/verify');
    await page.getByLabel('Trial payment method').selectOption('no_payment_method');
    await page.getByLabel('Organizations enabled').setChecked(!before.organizationsEnabled);
    await page.getByLabel('Session lifetime (seconds)').fill('7200');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await visible(page.getByText('Settings saved.'));
    expect(await settingsOf(appId)).toEqual({
      autoCreateCustomer: !before.autoCreateCustomer,
      magicLinkExpiryMinutes: 42,
      allowedCallbackUrls: 'https://app.example.com/auth/*\nhttps://*.example.org:*/callback',
      customVerificationUrl: 'https://app.example.com/verify',
      trialPaymentMethod: 'no_payment_method',
      organizationsEnabled: !before.organizationsEnabled,
      sessionTtlSeconds: 7200,
    });
    await shoot(page, 'app-settings');
    // Another section and back: the form shows what was saved, not what the page first loaded.
    await page.getByRole('link', { name: 'API keys' }).click();
    await visible(page.getByRole('heading', { name: 'API keys' }));
    await page.getByRole('link', { name: 'Settings' }).click();
    expect(await page.getByLabel('Magic-link expiry (minutes)').inputValue()).toBe('42');
    expect(await page.getByLabel('Trial payment method').inputValue()).toBe('no_payment_method');

    // Emptying the verification URL clears it.
    await page.getByLabel('Custom verification URL').fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await visible(page.getByText('Settings saved.'));
    expect((await settingsOf(appId)).customVerificationUrl).toBeNull();

    // The API's rules, each shown beside the field it concerns; nothing is saved.
    await page.getByLabel('Magic-link expiry (minutes)').fill('0');
    await page.getByLabel('Allowed callback URLs').fill('https://*.com/x');
    await page.getByLabel('Session lifetime (seconds)').fill('10');
    await page.getByRole('button', { name: 'Save settings' }).click();
    const expiry = page.getByLabel('Magic-link expiry (minutes)');
    await markedInvalid(expiry);
    await describedAs(expiry, 'must be at least 1 minute');
    await describedAs(page.getByLabel('Session lifetime (seconds)'), 'must be at least 60 seconds');
    await describedAs(page.getByLabel('Allowed callback URLs'), /invalid pattern/);
    await hasText(page.getByRole('alert'), 'Not saved: see the fields marked above.');
    expect((await settingsOf(appId)).magicLinkExpiryMinutes).toBe(42);
    await shoot(page, 'app-settings-errors');
  });

  it('tests a URL against the saved patterns and names the pattern that allows it', async () => {
    const { appId } = await server.createApp({
      allowedCallbackUrls: 'https://app.example.com/auth/*\nhttps://*.example.org:*/callback',
    });
    const { page } = await open();
    await signIn(page, `#/apps/${appId}`);
    const url = page.getByLabel('URL to test');
    const verdict = page.locator('.verdict');

    await url.fill('https://eu.shop.example.org:8443/callback');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await hasText(verdict, 'Allowed by the pattern https://*.example.org:*/callback.');
    await url.fill('https://app.example.com/auth/done?next=1');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await hasText(verdict, 'Allowed by the pattern https://app.example.com/auth/*.');
    await url.fill('https://evil.example.net/auth/done');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await hasText(verdict, 'Not allowed: no saved pattern matches https://evil.example.net/auth/done.');
    await shoot(page, 'app-url-test');
    await url.fill('http://localhost:5173/cb');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await hasText(verdict, 'Allowed: http://localhost is always allowed.');
  });

  it('creates an API key shown once, and revokes a key after confirmation (it then gets 401)', async () => {
    const { appId, apiKey: first } = await server.createApp();
    expect((await customersAnswer(first)).status).toBe(200);
    const { page } = await open();
    await signIn(page, `#/apps/${appId}/keys`);
    await visible(page.getByRole('heading', { name: 'API keys' }));
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = await page.getByRole('textbox', { name: 'New API key' }).inputValue();
    expect(secret).toMatch(/^tg_sk_/);
    expect((await customersAnswer(secret)).status).toBe(200);
    const rows = page.getByRole('table', { name: 'API keys' }).getByRole('row');
    await hasCount(rows, 3);
    // The list shows the last use of the key just used.
    await page.reload();
    await hasCount(page.getByRole('textbox', { name: 'New API key' }), 0);
    await hasCount(rows.filter({ hasText: 'never' }), 0);

    const prefix = `${first.slice(0, 12)}`;
    const keyRow = rows.filter({ hasText: prefix });
    await hasCount(keyRow, 1);
    const revoke = page.getByRole('button', { name: new RegExp(`^Revoke key ${prefix}`) });
    // Cancelling changes nothing.
    await revoke.click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await customersAnswer(first)).status).toBe(200);
    await revoke.click();
    await containsText(page.getByRole('dialog'), 'Requests made with it are refused at once');
    await shoot(page, 'app-keys-revoke-confirm');
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await containsText(keyRow, 'revoked');
    expect((await customersAnswer(first)).status).toBe(401);
    expect((await customersAnswer(secret)).status).toBe(200);
    await shoot(page, 'app-keys');
  });

  it('creates and edits a plan with typed features', async () => {
    const { appId } = await server.createApp();
    const price = await stripeFor(server).prices.create({
      product_data: { name: 'Dashboard Pro' },
      currency: 'usd',
      unit_amount: 1500,
      recurring: { interval: 'month' },
    });
    const { page } = await open();
    await signIn(page, `#/apps/${appId}/plans`);
    await visible(page.getByText('No plans yet.'));
    await page.getByRole('button', { name: 'New plan' }).click();
    await page.getByLabel('Plan ID').fill('pro');
    await page.getByLabel('Plan name').fill('Pro');
    await page.getByLabel('Stripe price').fill(price.id);
    await page.getByLabel('Trial days').fill('14');
    await page.getByRole('button', { name: 'Add feature' }).click();
    await page.getByLabel('Feature 1 key').fill('sso');
    await page.getByRole('button', { name: 'Add feature' }).click();
    await page.getByLabel('Feature 2 key').fill('projects');
    await page.getByLabel('Feature 2 type').selectOption('number');
    await page.getByLabel('Feature 2 value').fill('10');
    await page.getByRole('button', { name: 'Add feature' }).click();
    await page.getByLabel('Feature 3 key').fill('support');
    await page.getByLabel('Feature 3 type').selectOption('text');
    await page.getByLabel('Feature 3 value').fill('email');
    await page.getByLabel('Default plan').check();
    await shoot(page, 'app-plan-form');
    await page.getByRole('button', { name: 'Save plan' }).click();
    await visible(page.getByText('Plan pro saved.'));
    await containsText(page.getByRole('table', { name: 'Plans' }), 'Pro');

    const plans = async () =>
      (
        await server.graphql(
          'query($appId: ID!) { plans(appId: $appId) { id name stripePriceId trialDays features isDefault } }',
          { appId },
          server.adminToken,
        )
      ).body.data.plans;
    expect(await plans()).toEqual([
      {
        id: 'pro',
        name: 'Pro',
        stripePriceId: price.id,
        trialDays: 14,
        features: { sso: true, projects: 10, support: 'email' },
        isDefault: true,
      },
    ]);

    await page.getByRole('button', { name: 'Edit plan pro' }).click();
    expect(await page.getByLabel('Plan ID').inputValue()).toBe('pro');
    await page.getByLabel('Plan name').fill('Pro plus');
    await page.getByLabel('Feature 2 value').selectOption('false');
    await page.getByRole('button', { name: 'Remove feature 3' }).click();
    await page.getByRole('button', { name: 'Save plan' }).click();
    await visible(page.getByText('Plan pro saved.'));
    expect(await plans()).toEqual([
      {
        id: 'pro',
        name: 'Pro plus',
        stripePriceId: price.id,
        trialDays: 14,
        features: { projects: 10, sso: false },
        isDefault: true,
      },
    ]);
    await shoot(page, 'app-plans');

    // A bad id is the API's to refuse, shown beside the field.
    await page.getByRole('button', { name: 'New plan' }).click();
    await page.getByLabel('Plan ID').fill('Not A Slug');
    await page.getByLabel('Plan name').fill('Broken');
    await page.getByRole('button', { name: 'Save plan' }).click();
    await markedInvalid(page.getByLabel('Plan ID'));
    expect((await plans()).map((p: { id: string }) => p.id)).toEqual(['pro']);
  });

  it('finds a customer by e-mail fragment, pauses, resumes and cancels their subscription', async () => {
    const { appId, apiKey } = await server.createApp();
    const tag = `frag${Date.now().toString(36)}`;
    await createPaidPlan(server, appId, { id: 'team', name: 'Team', features: { seats: 5 } });
    const customerId = await createCustomer(apiKey, `ada.${tag}@example.com`);
    await createCustomer(apiKey, `grace.${tag}@example.com`);
    for (let i = 0; i < 22; i += 1) await createCustomer(apiKey, `bulk-${i}.${tag}@example.net`);
    await server.http
      .patch(`/v1/customers/${customerId}`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ name: 'Ada Lovelace', metadata: { team: 'engines' } })
      .expect(200);
    // A real subscription: Tollgate's checkout, paid on the emulator's page, applied from its notification.
    const checkout = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({
        planId: 'team',
        customerId,
        successUrl: 'https://app.example.com/thanks',
        cancelUrl: 'https://app.example.com/pricing',
      });
    expect(checkout.status).toBe(200);
    expect((await payOnHostedPage(checkout.body.url)).status).toBe(303);
    const subscription = await eventually(async () => {
      const res = await server.http
        .get('/v1/subscriptions/current')
        .query({ customerId })
        .set('authorization', `Bearer ${apiKey}`);
      return res.status === 200 ? res.body : undefined;
    });

    const { page } = await open();
    await signIn(page, `#/apps/${appId}/customers`);
    const search = page.getByRole('searchbox', { name: 'E-mail contains' });
    await search.fill(tag);
    await page.getByRole('button', { name: 'Search' }).click();
    await visible(page.getByText(`1–20 of 24`));
    await page.getByRole('button', { name: 'Next' }).click();
    await visible(page.getByText(`21–24 of 24`));
    await search.fill(`ADA.${tag.toUpperCase()}`);
    await page.getByRole('button', { name: 'Search' }).click();
    await visible(page.getByText('1–1 of 1'));
    await shoot(page, 'customers-search');
    await search.fill(`nobody-${tag}`);
    await page.getByRole('button', { name: 'Search' }).click();
    await visible(page.getByText(`No customer's e-mail contains “nobody-${tag}”.`));
    await search.fill(`ada.${tag}`);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: `ada.${tag}@example.com` }).click();

    await visible(page.getByRole('heading', { name: `ada.${tag}@example.com` }));
    await visible(page.getByText('Ada Lovelace'));
    await visible(page.getByText('engines'));
    const entitlements = page.getByRole('region', { name: 'Entitlements' });
    await containsText(entitlements, 'Plan: Team');
    await containsText(entitlements, 'seats');
    const status = page.locator(`[data-subscription="${subscription.id}"]`);
    await hasText(status, 'active');
    await hasCount(page.getByRole('region', { name: 'Invoices' }).getByRole('row'), 2);
    await containsText(
      page.getByRole('region', { name: 'Organizations' }),
      'Organizations are not enabled for this app',
    );
    await shoot(page, 'customer');

    await page.getByRole('button', { name: `Pause subscription ${subscription.id}` }).click();
    await containsText(page.getByRole('dialog'), 'loses the plan');
    await page.getByRole('dialog').getByRole('button', { name: 'Pause subscription' }).click();
    await hasText(status, 'paused');
    await containsText(entitlements, 'Plan: none');
    const stripe = stripeFor(server);
    const stripeId = (
      await server.graphql(
        'query($id: ID!, $appId: ID!) { customer(id: $id, appId: $appId) { paymentCustomerId } }',
        { id: customerId, appId },
        server.adminToken,
      )
    ).body.data.customer.paymentCustomerId;
    const [remote] = (await stripe.subscriptions.list({ customer: stripeId })).data;
    expect(remote!.pause_collection).not.toBeNull();
    const current = await server.http
      .get('/v1/subscriptions/current')
      .query({ customerId })
      .set('authorization', `Bearer ${apiKey}`);
    expect(current.status).toBe(404);
    await shoot(page, 'customer-paused');

    await page.getByRole('button', { name: `Resume subscription ${subscription.id}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Resume subscription' }).click();
    await hasText(status, 'active');
    const resumed = await server.http
      .get('/v1/subscriptions/current')
      .query({ customerId })
      .set('authorization', `Bearer ${apiKey}`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ id: subscription.id, status: 'active' });

    await page.getByRole('button', { name: `Cancel subscription ${subscription.id}` }).click();
    await containsText(page.getByRole('dialog'), 'This cannot be undone.');
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel subscription now' }).click();
    await hasText(status, 'canceled');
    await containsText(entitlements, 'Plan: none');
    await hasCount(page.getByRole('button', { name: `Resume subscription ${subscription.id}` }), 0);
    const canceled = await stripe.subscriptions.retrieve(remote!.id);
    expect(canceled.status).toBe('canceled');
  });

  it("shows a customer's balances and grants, grants credits through the form and voids them", async () => {
    const { appId, apiKey } = await server.createApp();
    const plan = await server.graphql(
      'mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }',
      {
        appId,
        input: {
          id: 'metered',
          name: 'Metered',
          isDefault: true,
          features: { calls: { limit: 10, reset: 'month' } },
        },
      },
      server.adminToken,
    );
    expect(plan.body.errors).toBeUndefined();
    const email = `metered-${Date.now()}@example.com`;
    const customerId = await createCustomer(apiKey, email);
    const used = await server.http
      .post('/v1/usage')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId, feature: 'calls', amount: 3 });
    expect(used.status).toBe(200);
    expect(used.body.allowed).toBe(true);
    const balances = async () => {
      const res = await server.http
        .get('/v1/balances')
        .query({ customerId })
        .set('authorization', `Bearer ${apiKey}`);
      expect(res.status).toBe(200);
      return res.body.data;
    };
    const resetsAt = (await balances())[0].resetsAt;
    expect(resetsAt).toEqual(expect.any(String));

    const { page } = await open();
    await signIn(page, `#/apps/${appId}/customers/${customerId}`);
    await visible(page.getByRole('heading', { name: email }));
    const row = page.getByRole('table', { name: 'Balances' }).locator('tr[data-feature="calls"]');
    const cell = (column: string) => row.locator(`[data-column="${column}"]`);
    await hasText(cell('limit'), '10');
    await hasText(cell('granted'), '0');
    await hasText(cell('used'), '3');
    await hasText(cell('remaining'), '7');
    await visible(page.getByText('No credit grants.'));

    // An amount that is no number is refused beside its field, and nothing is granted.
    await page.getByRole('button', { name: 'Grant credits' }).click();
    const amount = page.getByLabel('Amount', { exact: true });
    await markedInvalid(amount);
    await describedAs(amount, 'a whole number of units, e.g. 100');
    // A priority out of range is the API's to refuse, shown beside its field.
    await amount.fill('5');
    await page.getByLabel('Priority', { exact: true }).fill('101');
    await page.getByRole('button', { name: 'Grant credits' }).click();
    await markedInvalid(page.getByLabel('Priority', { exact: true }));
    await hasText(cell('granted'), '0');

    expect(await page.getByLabel('Feature', { exact: true }).inputValue()).toBe('calls');
    await page.getByLabel('Priority', { exact: true }).fill('10');
    await page.getByLabel('Description', { exact: true }).fill('Support goodwill');
    await page.getByRole('button', { name: 'Grant credits' }).click();
    await visible(page.getByText(/^Granted 5 calls \(grant_/));
    await hasText(cell('granted'), '5');
    await hasText(cell('used'), '3');
    await hasText(cell('remaining'), '12');
    await hasText(cell('overage'), '0');
    expect(await balances()).toEqual([
      { feature: 'calls', limit: 10, granted: 5, used: 3, remaining: 12, overage: 0, resetsAt },
    ]);
    const grantsOf = async () =>
      (
        await server.graphql(
          `query($appId: ID!, $customerId: ID!) { creditGrants(appId: $appId, customerId: $customerId) {
            id feature amount remaining priority expiresAt description voidedAt } }`,
          { appId, customerId },
          server.adminToken,
        )
      ).body.data.creditGrants;
    const [grant] = await grantsOf();
    expect(grant).toEqual({
      id: expect.stringMatching(/^grant_/),
      feature: 'calls',
      amount: 5,
      remaining: 5,
      priority: 10,
      expiresAt: null,
      description: 'Support goodwill',
      voidedAt: null,
    });
    const grantRow = page
      .getByRole('table', { name: 'Credit grants' })
      .locator(`tr[data-grant="${grant.id}"]`);
    await hasText(grantRow, `calls ${grant.id} 5 5 10 never Support goodwill — Void`);
    await shoot(page, 'customer-balances');

    await page.getByRole('button', { name: `Void grant ${grant.id}` }).click();
    await containsText(page.getByRole('dialog'), 'Its unspent 5 are removed from the balance now.');
    await page.getByRole('dialog').getByRole('button', { name: 'Void grant' }).click();
    await visible(page.getByText(`Grant ${grant.id} voided.`));
    await hasText(cell('granted'), '0');
    await hasText(cell('remaining'), '7');
    await hasCount(page.getByRole('button', { name: `Void grant ${grant.id}` }), 0);
    expect(await balances()).toEqual([
      { feature: 'calls', limit: 10, granted: 0, used: 3, remaining: 7, overage: 0, resetsAt },
    ]);
    const [voided] = await grantsOf();
    expect(voided).toMatchObject({ id: grant.id, remaining: 0, voidedAt: expect.any(String) });
    await hasText(
      grantRow,
      `calls ${grant.id} 5 0 10 never Support goodwill ${voided.voidedAt.slice(0, 10)} ${voided.voidedAt.slice(11, 16)} UTC`,
    );

    // On a phone the page, its tables and the form fit without sideways scrolling.
    await page.setViewportSize(PHONE);
    await visible(page.getByRole('button', { name: 'Grant credits' }));
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shoot(page, 'phone-customer-balances');
  });

  it("opens the same pages limited to its app when signed in with the app's API key", async () => {
    const { appId, apiKey } = await server.createApp({
      magicLinkExpiryMinutes: 21,
      allowedCallbackUrls: 'https://app.example.com/auth/*',
    });
    const other = await server.createApp();
    const email = `keyview-${Date.now()}@example.com`;
    await createCustomer(apiKey, email);
    await server.graphql(
      'mutation($appId: ID!) { upsertPlan(appId: $appId, input: { id: "free", name: "Free", isDefault: true }) { id } }',
      { appId },
      server.adminToken,
    );
    const { page } = await open();
    await page.goto(`${server.url}/dashboard`);
    await page.getByLabel('Admin token').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Settings' }));
    expect(page.url()).toBe(`${server.url}/dashboard#/apps/${appId}`);
    await visible(page.getByText('Signed in with an API key: its app only'));
    // Settings are shown, not changed; keys are the operator's.
    const settings = page.getByRole('region', { name: 'Settings' });
    await containsText(settings, 'Magic-link expiry (minutes) 21');
    await hasCount(page.getByRole('button', { name: 'Save settings' }), 0);
    await hasCount(page.getByRole('navigation', { name: 'App sections' }).getByRole('link'), 5);
    await hasCount(page.getByRole('link', { name: 'API keys' }), 0);
    await page.getByLabel('URL to test').fill('https://app.example.com/auth/cb');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await hasText(page.locator('.verdict'), 'Allowed by the pattern https://app.example.com/auth/*.');
    await shoot(page, 'api-key-view');

    await page.getByRole('link', { name: 'Plans' }).click();
    await containsText(page.getByRole('table', { name: 'Plans' }), 'Free');
    await hasCount(page.getByRole('button', { name: 'New plan' }), 0);
    await hasCount(page.getByRole('button', { name: 'Edit plan free' }), 0);

    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByRole('searchbox', { name: 'E-mail contains' }).fill('keyview-');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: email }).click();
    await visible(page.getByRole('heading', { name: email }));
    await containsText(page.getByRole('region', { name: 'Entitlements' }), 'Plan: Free');

    // Only its own app: the home leads back to it, another app's page is not found.
    await page.goto(`${server.url}/dashboard#/apps/${other.appId}`);
    await visible(page.getByRole('heading', { name: 'App not found' }));
    await page.goto(`${server.url}/dashboard#/`);
    await visible(page.getByRole('heading', { name: 'Settings' }));
    expect(page.url()).toBe(`${server.url}/dashboard#/apps/${appId}`);
  });

  it('fits a phone-sized screen without sideways scrolling', async () => {
    const { appId, apiKey } = await server.createApp();
    await createCustomer(apiKey, `phone-${Date.now()}@example.com`);
    const { page } = await open(PHONE);
    await signIn(page);
    await shoot(page, 'phone-apps');
    for (const hash of [`#/apps/${appId}/settings`, `#/apps/${appId}/customers`]) {
      await page.goto(`${server.url}/dashboard${hash}`);
      await visible(page.getByRole('navigation', { name: 'App sections' }));
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
    }
    await shoot(page, 'phone-customers');
    await page.goto(`${server.url}/dashboard#/apps/${appId}/settings`);
    await visible(page.getByRole('button', { name: 'Save settings' }));
    await shoot(page, 'phone-settings');
  });
});

describeRequiring(chromiumRequirement(CHROMIUM), 'the dashboard webhook pages in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    // One retry a second after the first attempt, so a failing delivery is marked failed within seconds.
    server = await startTestServer({ env: { WEBHOOK_RETRY_SCHEDULE: '1' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
    await browser?.close();
    await server?.close();
  });

  it('adds an endpoint (secret shown once), shows a failed delivery and retries it', async () => {
    const { appId, apiKey } = await server.createApp();
    let healthy = false;
    receiver.status = (r) => (r.path === '/dashboard-hook' && !healthy ? 500 : 200);
    const context = await browser.newContext({ viewport: DESKTOP });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    const page = await context.newPage();
    const foreign: string[] = [];
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        problems.push(`console: ${message.text()}`);
    });
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${server.url}/`)) return route.continue();
      foreign.push(url);
      return route.abort();
    });
    await page.goto(`${server.url}/dashboard#/apps/${appId}/webhooks`);
    await page.getByLabel('Admin token').fill(server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByText('No webhook endpoints.'));
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/dashboard-hook`);
    await page.getByLabel('Event types').fill('customer.created');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(secret).toMatch(/^whsec_/);

    const created = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: `hook-${Date.now()}@example.com` });
    expect(created.status).toBe(201);
    const mine = () => receiver.received.filter((r) => r.path === '/dashboard-hook');
    await eventually(() => (mine().length >= 2 ? true : undefined), {
      what: 'two failed attempts',
      timeoutMs: 20_000,
    });

    const refresh = page.getByRole('button', {
      name: `Refresh deliveries to ${receiver.url}/dashboard-hook`,
    });
    const status = page.locator('[data-delivery]');
    await eventually(
      async () => {
        await refresh.click();
        return (await status.count()) === 1 && (await status.innerText()) === 'failed' ? true : undefined;
      },
      { what: 'the delivery to be shown as failed', timeoutMs: 20_000, intervalMs: 250 },
    );
    await containsText(
      page.getByRole('region', { name: `Deliveries to ${receiver.url}/dashboard-hook` }),
      '500',
    );
    await page.screenshot({ path: path.join(SCREENSHOTS, 'app-webhooks.png'), fullPage: true });

    healthy = true;
    const deliveryId = await status.getAttribute('data-delivery');
    await page.getByRole('button', { name: `Retry delivery ${deliveryId}` }).click();
    await eventually(
      async () => {
        await refresh.click();
        return (await status.innerText()) === 'succeeded' ? true : undefined;
      },
      { what: 'the retried delivery to succeed', timeoutMs: 20_000, intervalMs: 250 },
    );
    const attempts = mine();
    expect(attempts.length).toBe(3);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    // The secret the page showed once is the one the deliveries are signed with.
    for (const attempt of attempts) expect(verify(secret, attempt)).toEqual(attempts[0]!.payload);
    await page.reload();
    await visible(page.getByRole('heading', { name: 'Webhook endpoints' }));
    await hasCount(page.getByRole('textbox', { name: 'Signing secret' }), 0);
    expect(foreign).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
