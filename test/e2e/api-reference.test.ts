import { readFileSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import YAML from 'yaml';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The REST API reference at /docs in Debian's Chromium: Redoc renders schema/openapi.yaml, the customers
 * operations are there to be read, and the page asks nothing of any other host (no CDN, no web fonts, no
 * logo from elsewhere). Every request the page makes is listed, whatever its kind (scripts, styles,
 * images, fetches, workers), and one to another origin fails the test; CSP violations and script errors
 * are reported on the console and fail it too.
 */

const RENDER_TIMEOUT_MS = 30_000;

/** The summaries of the customers operations, as the document states them. */
function customerOperations(): string[] {
  const document = YAML.parse(readFileSync('schema/openapi.yaml', 'utf8')) as {
    paths: Record<string, Record<string, { tags?: string[]; summary?: string }>>;
  };
  return Object.values(document.paths)
    .flatMap((methods) => Object.values(methods))
    .filter((operation) => operation.tags?.includes('Customers'))
    .map((operation) => operation.summary ?? '');
}

describeRequiring(chromiumRequirement(CHROMIUM), 'the API reference in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('renders the customers operations from the OpenAPI document without a request leaving the origin', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const requested: string[] = [];
    const foreign: string[] = [];
    const problems: string[] = [];
    context.on('request', (req) => {
      requested.push(req.url());
    });
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${server.url}/`)) return route.continue();
      foreign.push(url);
      return route.abort();
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });

    const response = await page.goto(`${server.url}/docs`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");

    const operations = customerOperations();
    expect(operations).toEqual(expect.arrayContaining(["List the app's customers, newest first"]));
    expect(operations.length).toBeGreaterThanOrEqual(5);
    // The menu groups operations by tag: open Customers and find each of its operations there.
    const menu = page.locator('.menu-content');
    await menu.getByText('Customers', { exact: true }).first().click({ timeout: RENDER_TIMEOUT_MS });
    for (const summary of operations) {
      await menu.getByText(summary, { exact: true }).first().waitFor({ timeout: RENDER_TIMEOUT_MS });
    }
    // And the operation itself is documented in the page body, with its path.
    const list = page.locator('[id="tag/Customers/operation/listCustomers"]');
    await list.waitFor({ timeout: RENDER_TIMEOUT_MS });
    await list.getByText('/v1/customers', { exact: false }).first().waitFor({ timeout: RENDER_TIMEOUT_MS });

    // Search runs in Redoc's worker (a blob: URL the CSP allows) and finds an operation by its words.
    await page.getByPlaceholder('Search...').fill('newest first');
    await page
      .locator('[data-role="search:results"]')
      .getByText("List the app's customers, newest first")
      .first()
      .waitFor({ timeout: RENDER_TIMEOUT_MS });

    // The document came from this Tollgate, and so did everything else the page asked for.
    expect(requested).toContain(`${server.url}/openapi.yaml`);
    expect(
      requested.filter(
        (url) => !url.startsWith(`${server.url}/`) && !url.startsWith('data:') && !url.startsWith('blob:'),
      ),
    ).toEqual([]);
    expect(foreign).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
