import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { tokenFromDevMailbox, uniqueEmail } from '../helpers/auth-fixtures.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * @tollgate/client in a real browser (Chromium), loaded by a page of another origin than Tollgate's:
 * magic-link login and a feature gate through CORS, the rate-limit headers readable, an API key refused.
 */
const DIST = path.join(process.cwd(), 'packages/client/dist');
/** The package's one dependency, `jose`, as a page without a bundler loads it (an import map). */
const JOSE = path.join(process.cwd(), 'node_modules/jose/dist/webapi');
const PAGE =
  '<!doctype html><title>shop</title><script type="importmap">{"imports":{"jose":"/jose/index.js"}}</script>';

/** A static site: an empty page and the built package under /client/. */
async function startSite(): Promise<{ server: Server; port: number }> {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://site');
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      return;
    }
    if (url.pathname.startsWith('/jose/')) {
      const file = url.pathname.slice('/jose/'.length);
      if (!/^([a-z0-9_]+\/)*[a-z0-9_]+\.js$/.test(file)) return void res.writeHead(404).end();
      try {
        const body = await readFile(path.join(JOSE, file));
        res.writeHead(200, { 'content-type': 'text/javascript' }).end(body);
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    // A module of the package: `name.js`, or `folder/name.js` one level down (resources/).
    const name = url.pathname.startsWith('/client/') ? url.pathname.slice('/client/'.length) : '';
    if (!/^([a-z-]+\/)?[a-z-]+\.js$/.test(name)) return void res.writeHead(404).end();
    try {
      const body = await readFile(path.join(DIST, name));
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describeRequiring(chromiumRequirement(CHROMIUM), '@tollgate/client in a browser', () => {
  let tollgate: TestServer;
  let site: { server: Server; port: number };
  let browser: Browser;
  let appId: string;
  let apiKey: string;

  beforeAll(async () => {
    tollgate = await startTestServer();
    ({ appId, apiKey } = await tollgate.createApp());
    const free = await tollgate.graphql(
      `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
      { appId, input: { id: 'free', name: 'Free', features: { export: true }, isDefault: true } },
      tollgate.adminToken,
    );
    expect(free.body.errors).toBeUndefined();
    site = await startSite();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.server.close(resolve));
    await tollgate?.close();
  });

  it('logs in by magic link and gates a feature from a localhost page (development)', async () => {
    const page = await browser.newPage();
    await page.goto(`http://localhost:${site.port}/`);
    const email = uniqueEmail('browser');
    const sent = await page.evaluate(
      async ({ baseUrl, appId, email, port }) => {
        const { TollgateAuth } = await import('/client/index.js' as string);
        const auth = new TollgateAuth({
          appId,
          baseUrl,
          devCallbackUrl: `http://localhost:${port}/callback`,
        });
        return auth.sendMagicLink(email);
      },
      { baseUrl: tollgate.url, appId, email, port: site.port },
    );
    expect(sent).toEqual({ success: true });
    const token = await tokenFromDevMailbox(tollgate, email);
    const result = await page.evaluate(
      async ({ baseUrl, appId, token }) => {
        const { TollgateAuth } = await import('/client/index.js' as string);
        const auth = new TollgateAuth({ appId, baseUrl, sessionCacheTTL: 30 });
        const { sessionToken, customer } = await auth.verify(token);
        const session = await auth.getSession(sessionToken);
        const gate = await auth.check(sessionToken, 'export');
        await auth.signOut(sessionToken);
        const after = await auth.check(sessionToken, 'export').catch((e: any) => ({
          statusCode: e.statusCode,
          rateLimit: e.rateLimit,
        }));
        return { email: customer.email, planName: session.entitlements.planName, gate, after };
      },
      { baseUrl: tollgate.url, appId, token },
    );
    expect(result).toEqual({
      email,
      planName: 'Free',
      gate: { feature: 'export', allowed: true, value: true },
      // The 401 and its exposed rate-limit headers are readable by the page.
      after: {
        statusCode: 401,
        rateLimit: { limit: 100000, remaining: expect.any(Number), reset: expect.any(Number) },
      },
    });
    await page.close();
  });

  it('refuses the API-key client in a page, and Tollgate refuses a key sent from one (403)', async () => {
    const page = await browser.newPage();
    await page.goto(`http://localhost:${site.port}/`);
    const result = await page.evaluate(
      async ({ baseUrl, apiKey }) => {
        const { Tollgate } = await import('/client/index.js' as string);
        let refusedHere = '';
        try {
          new Tollgate({ apiKey, baseUrl });
        } catch (e: any) {
          refusedHere = e.message;
        }
        const res = await fetch(`${baseUrl}/v1/customers`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        return { refusedHere, status: res.status, body: await res.json() };
      },
      { baseUrl: tollgate.url, apiKey },
    );
    expect(result.refusedHere).toMatch(/refuses to run in a browser/);
    expect(result.status).toBe(403);
    expect(result.body.message).toBe(
      'API keys must not be used from a browser page: call Tollgate from your server',
    );
    await page.close();
  });

  it('gives a page of an origin no pattern allows nothing to read', async () => {
    const page = await browser.newPage();
    // 127.0.0.1 is not localhost: no pattern of the app names it.
    await page.goto(`http://127.0.0.1:${site.port}/`);
    const result = await page.evaluate(
      async ({ baseUrl, appId }) => {
        const { TollgateAuth } = await import('/client/index.js' as string);
        const auth = new TollgateAuth({ appId, baseUrl });
        return auth
          .verify('tg_ml_whatever')
          .then(() => 'answered')
          .catch((e: any) => `${e.name} ${e.statusCode} ${e.error}`);
      },
      { baseUrl: tollgate.url, appId },
    );
    expect(result).toBe('TollgateError 0 Network Error');
    await page.close();
  });

  it('fetches an entitlement token and checks features offline in the page (WebCrypto)', async () => {
    const customer = await tollgate.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: uniqueEmail('offline') });
    const sessionToken = await new Fixtures(tollgate, appId).session(customer.body.id);
    const page = await browser.newPage();
    await page.goto(`http://localhost:${site.port}/`);
    const result = await page.evaluate(
      async ({ baseUrl, appId, sessionToken }) => {
        const { TollgateAuth } = await import('/client/index.js' as string);
        const auth = new TollgateAuth({ appId, baseUrl });
        const { token } = await auth.entitlementToken(sessionToken);
        const ents = await auth.verifyEntitlementToken(token);
        return { export: ents.has('export'), other: ents.has('other'), plan: ents.claims.plan };
      },
      { baseUrl: tollgate.url, appId, sessionToken },
    );
    expect(result).toEqual({ export: true, other: false, plan: { id: 'free', name: 'Free' } });
    await page.close();
  });
});
