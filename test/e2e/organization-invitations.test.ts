import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { withContext } from '../../src/db.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * An organization's seats and invitations in a real browser (Debian's Chromium): the operator invites
 * someone from the dashboard's organization page, the invitation e-mail arrives in the dev mailbox, and
 * its link, opened in the browser, leads to the app's callback page, which verifies the token as an app
 * does; the invitee is then a member, signed in in the organization's context.
 */

const STEP_TIMEOUT_MS = 15_000;

/**
 * The app's callback page, served by the test as the app's own web server would: it posts the token
 * from its query to Tollgate's `…/auth/verify` (a cross-origin call CORS allows, the page's origin being
 * one of the app's callback patterns), reads the session with the answer's token and shows what it says.
 */
function callbackPage(tollgate: string, appId: string): string {
  return `<!doctype html><html><body><p id="state">verifying</p><script>
    (async () => {
      const token = new URLSearchParams(location.search).get('token');
      const verified = await fetch('${tollgate}/v1/apps/${appId}/auth/verify', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
      const login = await verified.json();
      const session = await fetch('${tollgate}/v1/apps/${appId}/auth/session', {
        headers: { authorization: 'Bearer ' + login.sessionToken } }).then((r) => r.json());
      document.getElementById('state').textContent =
        verified.status + ' ' + session.customer.email + ' ' + session.organizationId + ' ' + session.orgRole;
    })().catch((e) => { document.getElementById('state').textContent = 'failed: ' + e.message; });
  </script></body></html>`;
}

async function textOf(page: Page, selector: string, expected: string | RegExp): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      last = (await page.locator(selector).innerText()).replace(/\s+/g, ' ').trim();
      return (typeof expected === 'string' ? last === expected : expected.test(last)) || undefined;
    },
    { timeoutMs: STEP_TIMEOUT_MS, what: `${selector} to read ${String(expected)} (last: ${last})` },
  );
}

describeRequiring(chromiumRequirement(CHROMIUM), 'organization invitations in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let appServer: Server;
  let appUrl: string;
  /** The app whose callback page the app server serves (set by the test before the link is opened). */
  let currentAppId = '';
  beforeAll(async () => {
    server = await startTestServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    appServer = createServer((req, res) => {
      if (!req.url?.startsWith('/app/callback')) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' }).end(callbackPage(server.url, currentAppId));
    });
    await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
    // localhost, not 127.0.0.1: an app's callback patterns also open CORS for app-less paths to every
    // test sharing the database, and 127.0.0.1 stands for an origin no app allows (test/e2e/graphiql.test.ts).
    appUrl = `http://localhost:${(appServer.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((resolve) => appServer?.close(resolve));
  });

  it('invites from the dashboard, e-mails the link, and the link accepts the invitation in the browser', async () => {
    const { appId, apiKey } = await server.createApp({
      organizationsEnabled: true,
      allowedCallbackUrls: 'http://localhost:*/app/*',
    });
    const plan = await server.graphql(
      `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
      { appId, input: { id: 'team', name: 'Team', isDefault: true, seats: { mode: 'limit', included: 3 } } },
      server.adminToken,
    );
    expect(plan.body.errors).toBeUndefined();
    const fx = new Fixtures(server, appId);
    const owner = await fx.customer(`owner-${Date.now()}@example.com`);
    const orgId = await fx.organization({ [owner]: 'owner' });
    const invitee = `invitee-${Date.now()}@example.com`;

    const context = await browser.newContext();
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    currentAppId = appId;

    // The operator's organization page: seats, members, and the invitation form.
    await page.goto(`${server.url}/dashboard#/apps/${appId}/organizations/${orgId}`);
    await page.getByLabel('Admin token').fill(server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await textOf(page, '[data-seats="used"]', '1 of 3');
    await page.getByLabel('E-mail').fill(invitee);
    await page.getByLabel('Redirect URL').fill(`${appUrl}/app/callback`);
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await textOf(page, '[role="status"]', `Invitation sent to ${invitee}.`);
    await textOf(page, '[data-seats="used"]', '2 of 3');
    const [invitation] = (
      await server.http.get(`/v1/organizations/${orgId}/invitations`).set('authorization', `Bearer ${apiKey}`)
    ).body.data;
    expect(invitation).toMatchObject({ email: invitee, role: 'member', status: 'pending' });
    await textOf(page, `[data-invitation="${invitation.id}"]`, 'pending');

    // The e-mail in the dev mailbox; its link, opened in the browser, ends on the app's callback page.
    const mail = await eventually(async () => {
      const box = await server.http.get('/dev/mailbox.json');
      return (box.body.messages as { to: string; text: string }[]).find((m) => m.to === invitee);
    });
    // The e-mailed link points at PUBLIC_BASE_URL; the browser opens the same path on the running server.
    const emailed = new URL(/https?:\/\/\S+/.exec(mail.text)![0]);
    expect(emailed.pathname).toBe(`/v1/apps/${appId}/auth/verify`);
    expect(emailed.searchParams.get('token')).toMatch(/^tg_inv_/);
    const link = `${server.url}${emailed.pathname}${emailed.search}`;
    const inviteePage = await context.newPage();
    inviteePage.on('pageerror', (error) => problems.push(error.message));
    await inviteePage.goto(link);
    await textOf(inviteePage, '#state', `200 ${invitee} ${orgId} member`);

    const members = await withContext(server.deps.orm, () =>
      server.deps.orm.em.getConnection().execute<{ email: string; role: string }[]>(
        `select c.email, m.role from organization_member m join customer c on c.id = m.customer_id
            where m.organization_id = ? order by m.role`,
        [orgId],
      ),
    );
    expect(members).toEqual([
      { email: invitee, role: 'member' },
      { email: expect.stringMatching(/^owner-/), role: 'owner' },
    ]);

    // Back on the dashboard: accepted, and the seat is a member's now.
    await page.reload();
    await textOf(page, `[data-invitation="${invitation.id}"]`, 'accepted');
    await textOf(page, '[data-seats="used"]', '2 of 3');
    expect(problems).toEqual([]);
    await context.close();
  });
});
