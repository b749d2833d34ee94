import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { eventually } from '../helpers/eventually.js';
import { type OperatorServer, signInTokenOf, startOperatorServer } from '../helpers/operators.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';

/**
 * Operators in a real browser (Debian's Chromium): each signs in by e-mail (the link read from a real
 * SMTP sink) and gets a cookie session; the page shows each role what it may do, and the API refuses
 * the rest. One database of its own: which operator is the last owner is this file's to decide.
 */

const STEP_TIMEOUT_MS = 15_000;

async function visible(locator: Locator): Promise<void> {
  await locator.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
}

/** A probe for `eventually`: true once the audit log shows rows, every one of them of `action`. */
function showsOnlyAction(page: Page, action: string): () => Promise<true | undefined> {
  return async () => {
    const shown = await page.locator('tbody tr td:nth-child(3)').allTextContents();
    return shown.length > 0 && shown.every((a) => a === action) ? true : undefined;
  };
}

/** Buttons on the page's main part a person could press, by label. */
async function visibleButtons(page: Page): Promise<string[]> {
  return page
    .locator('main button:visible')
    .evaluateAll((buttons) =>
      buttons.map((b) => (b.getAttribute('aria-label') ?? b.textContent ?? '').trim()),
    );
}

describeRequiring(chromiumRequirement(CHROMIUM), 'operators in the dashboard', () => {
  let ops: OperatorServer;
  let browser: Browser;
  let appId: string;
  const problems: string[] = [];

  beforeAll(async () => {
    ops = await startOperatorServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const app = await ops.server.createApp({ name: 'Viewed app' });
    appId = app.appId;
    await ops.server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${app.apiKey}`)
      .send({ email: 'seen@example.com' })
      .expect(201);
  });
  afterAll(async () => {
    await browser?.close();
    await ops?.close();
  });
  afterEach(() => {
    expect(problems.splice(0)).toEqual([]);
  });

  /** A fresh browser that signs in by e-mail through the page, as a person would. */
  async function signedIn(email: string): Promise<Page> {
    const context = await browser.newContext();
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.goto(`${ops.server.url}/dashboard`);
    // Development: the admin-token form stays, with its one "Sign in" button; e-mail is a form of its own.
    await visible(page.getByLabel('Admin token'));
    await page.getByLabel('E-mail').fill(email);
    const before = ops.mail.received.length;
    await page.getByRole('button', { name: 'Send sign-in link' }).click();
    await visible(page.getByText(`If ${email} belongs to an operator, a sign-in link is on its way.`));
    const mail = await ops.mail.waitFor(
      (m) => ops.mail.received.indexOf(m) >= before && m.rcptTo.includes(email),
    );
    const token = signInTokenOf(mail.parsed.text ?? '');
    const next = await context.newPage();
    next.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.close();
    await next.goto(`${ops.server.url}/dashboard#sign-in=${encodeURIComponent(token)}`);
    await visible(next.getByText(`${email} (`));
    // The token leaves the address bar at once; the session is a cookie the page cannot read.
    expect(next.url()).toBe(`${ops.server.url}/dashboard`);
    const cookies = await context.cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([
      ['tollgate_operator', true, 'Strict'],
    ]);
    expect(await next.evaluate(() => document.cookie)).toBe('');
    return next;
  }

  it('shows a viewer the data without a single write control, and the API refuses a forged write (403)', async () => {
    await ops.addOperator('viewer@example.com', 'viewer');
    const page = await signedIn('viewer@example.com');
    await visible(page.getByRole('link', { name: 'Viewed app' }));
    expect(await visibleButtons(page)).toEqual([]);
    await page.getByRole('link', { name: 'Viewed app' }).click();
    await visible(page.getByRole('heading', { name: 'Viewed app' }));
    await page.goto(`${ops.server.url}/dashboard#/apps/${appId}/customers`);
    await visible(page.getByText('seen@example.com'));
    for (const button of await visibleButtons(page)) expect(button).toMatch(/^(Search|Previous|Next)/);
    await page.goto(`${ops.server.url}/dashboard#/apps/${appId}/plans`);
    await visible(page.getByRole('heading', { name: 'Viewed app' }));
    expect(await visibleButtons(page)).toEqual([]);
    expect(await page.getByRole('link', { name: 'Operators' }).count()).toBe(0);

    // What the page leaves out, a hand-written request cannot do either.
    const forged = await page.evaluate(async () => {
      const { csrfToken } = await (await fetch('/dashboard/session')).json();
      const res = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
        body: JSON.stringify({ query: 'mutation { createApp(input: { name: "forged" }) { app { id } } }' }),
      });
      return { status: res.status, body: await res.json() };
    });
    expect(forged.status).toBe(403);
    expect(forged.body.errors[0].extensions).toEqual({ code: 'FORBIDDEN', statusCode: 403 });
    const apps = await ops.server.graphql('{ apps { name } }', {}, ops.server.adminToken);
    expect(apps.body.data.apps.map((a: { name: string }) => a.name)).not.toContain('forged');
    await page.context().close();
  });

  it('lets an owner add and remove an operator, whose session stops at once; an admin cannot reach Operators', async () => {
    await ops.addOperator('owner@example.com', 'owner');
    const owner = await signedIn('owner@example.com');
    await owner.getByRole('link', { name: 'Operators' }).click();
    await visible(owner.getByRole('heading', { name: 'Operators' }));
    const form = owner.getByRole('form', { name: 'Add operator' });
    await form.getByLabel('E-mail').fill('temp-admin@example.com');
    await form.getByLabel('Role').selectOption('admin');
    await form.getByRole('button', { name: 'Add operator' }).click();
    await visible(owner.getByRole('cell', { name: 'temp-admin@example.com', exact: true }));

    const admin = await signedIn('temp-admin@example.com');
    await visible(admin.getByRole('link', { name: 'Audit log' }));
    expect(await admin.getByRole('link', { name: 'Operators' }).count()).toBe(0);
    await admin.goto(`${ops.server.url}/dashboard#/operators`);
    await visible(admin.getByText('This page is not yours to see.'));
    await admin.goto(`${ops.server.url}/dashboard#/apps/${appId}`);
    await visible(admin.getByRole('heading', { name: 'Viewed app' }));

    await owner.getByRole('button', { name: 'Remove operator temp-admin@example.com' }).click();
    await owner.getByRole('dialog').getByRole('button', { name: 'Remove operator' }).click();
    await eventually(
      async () =>
        (await owner.getByRole('cell', { name: 'temp-admin@example.com', exact: true }).count()) === 0 ||
        undefined,
      { timeoutMs: STEP_TIMEOUT_MS, what: 'the removed operator to leave the table' },
    );

    // The removed operator's very next request is refused, and the page says why.
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Apps' }).click();
    await visible(admin.getByText('Your operator session has ended: sign in again.'));
    await visible(admin.getByRole('button', { name: 'Send sign-in link' }));

    // The audit log tells who did it.
    await owner.getByRole('link', { name: 'Audit log' }).click();
    await owner.getByLabel('Action (e.g. customer.update)').fill('operator.delete');
    await owner.getByRole('button', { name: 'Search' }).click();
    // Until the search answers, the page still shows the whole log, marked stale (the owner's operator.create too).
    await eventually(showsOnlyAction(owner, 'operator.delete'), {
      timeoutMs: STEP_TIMEOUT_MS,
      what: 'the log to show only operator.delete',
    });
    const deletion = owner
      .getByRole('row')
      .filter({ has: owner.getByRole('cell', { name: 'operator.delete', exact: true }) });
    await visible(deletion.getByRole('cell', { name: 'owner@example.com', exact: true }));
    await admin.context().close();
    await owner.context().close();
  });

  it('marks the audit log stale while a search loads, and never lets an older search overwrite a newer one', async () => {
    await ops.addOperator('auditor@example.com', 'owner');
    const page = await signedIn('auditor@example.com');
    await page.getByRole('link', { name: 'Audit log' }).click();
    const actions = page.locator('tbody tr td:nth-child(3)');
    const table = page.locator('.table-wrap');
    // The whole log first: the app's creation by the admin token and its customer's by its API key.
    await visible(page.getByRole('cell', { name: 'customer.create', exact: true }).first());
    await visible(page.getByRole('cell', { name: 'app.create', exact: true }).first());

    // The search for app.create is held until the end, to answer after the one made after it.
    let heard!: () => void;
    const held = new Promise<void>((resolve) => {
      heard = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/graphql', async (route) => {
      const body = route.request().postData() ?? '';
      if (body.includes('query DashboardAuditEvents(') && body.includes('"action":"app.create"')) {
        heard();
        await released;
      }
      return route.fallback();
    });
    // Answers the page has read, counted in the page: the point after which a late answer has had its say.
    await page.evaluate(() => {
      const seen = window as unknown as { answers: number };
      seen.answers = 0;
      const json = Response.prototype.json;
      Response.prototype.json = function (this: Response) {
        const read = json.call(this);
        read.then(
          () => (seen.answers += 1),
          () => (seen.answers += 1),
        );
        return read;
      };
    });
    const answers = () => page.evaluate(() => (window as unknown as { answers: number }).answers);

    const filter = page.getByLabel('Action (e.g. customer.update)');
    await filter.fill('app.create');
    await page.getByRole('button', { name: 'Search' }).click();
    await held;
    // While it loads, the rows of the previous search stay, marked as such.
    expect(await table.getAttribute('aria-busy')).toBe('true');
    expect(await table.getAttribute('class')).toBe('table-wrap stale');
    await visible(page.getByRole('status').filter({ hasText: 'Searching the audit log…' }));
    expect(await actions.allTextContents()).toContain('customer.create');

    await filter.fill('customer.create');
    await page.getByRole('button', { name: 'Search' }).click();
    await eventually(showsOnlyAction(page, 'customer.create'), {
      timeoutMs: STEP_TIMEOUT_MS,
      what: 'the log to show only customer.create',
    });
    expect(await table.getAttribute('aria-busy')).toBe('false');
    expect(await table.getAttribute('class')).toBe('table-wrap');

    const before = await answers();
    release();
    await eventually(async () => ((await answers()) > before ? true : undefined), {
      timeoutMs: STEP_TIMEOUT_MS,
      what: 'the held app.create answer to be read',
    });
    // Read, and ignored: the page still shows the search made last.
    expect(await showsOnlyAction(page, 'customer.create')()).toBe(true);
    expect(await table.getAttribute('aria-busy')).toBe('false');
    await page.context().close();
  });

  it('refuses to remove the last owner', async () => {
    // Every other owner of this file's database steps down once this one is in.
    await ops.addOperator('last@example.com', 'owner');
    const list = await ops.server.graphql('{ operators { id email role } }', {}, ops.server.adminToken);
    for (const o of list.body.data.operators) {
      if (o.role === 'owner' && o.email !== 'last@example.com')
        await ops.server.graphql(
          'mutation($id: ID!) { removeOperator(id: $id) { id } }',
          { id: o.id },
          ops.server.adminToken,
        );
    }
    const survivors = await ops.server.graphql('{ operators { email role } }', {}, ops.server.adminToken);
    const owners = survivors.body.data.operators.filter((o: { role: string }) => o.role === 'owner');
    expect(owners.map((o: { email: string }) => o.email)).toEqual(['last@example.com']);
    const page = await signedIn('last@example.com');
    await page.getByRole('link', { name: 'Operators' }).click();
    await page.getByRole('button', { name: 'Remove operator last@example.com' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove operator' }).click();
    await visible(page.getByRole('dialog').getByText('The last owner cannot be removed or demoted'));
    const after = await ops.server.graphql('{ operators { email role } }', {}, ops.server.adminToken);
    expect(after.body.data.operators.map((o: { email: string }) => o.email)).toContain('last@example.com');
    await page.context().close();
  });
});
