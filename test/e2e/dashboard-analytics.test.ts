import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { AnalyticsFixtures, day } from '../helpers/analytics-fixtures.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { eventually } from '../helpers/eventually.js';
import { chromiumRequirement, describeRequiring } from '../helpers/requirements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The dashboard's analytics in a real browser (Debian's Chromium): the overview card on the app's home
 * and the Analytics page, whose chart points and bars carry exactly the numbers `GET /v1/analytics`
 * answers, on a desktop and on a phone; no request leaves the origin and no script fails. Screenshots
 * go to test-results/dashboard/.
 */

const SCREENSHOTS = path.resolve(import.meta.dirname, '../../test-results/dashboard');
const STEP_TIMEOUT_MS = 15_000;

describeRequiring(chromiumRequirement(CHROMIUM), 'the analytics dashboard in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let fx: AnalyticsFixtures;
  let appId: string;
  let apiKey: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    server = await startTestServer();
    fx = new AnalyticsFixtures(server);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    ({ appId, apiKey } = await server.createApp({ allowMultipleSubscriptions: true }));
    await fx.plan(appId, 'basic', { unitAmount: 1_000 });
    await fx.plan(appId, 'pro', { unitAmount: 3_000 });
    const first = await fx.subscribe(apiKey, await fx.customer(apiKey), 'basic');
    await fx.subscribe(apiKey, await fx.customer(apiKey), 'pro');
    const up = await server.http
      .post(`/v1/subscriptions/${first.id}/change-plan`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ planId: 'pro' });
    expect(up.status).toBe(200);
    await fx.subscribe(apiKey, await fx.customer(apiKey), 'basic');
    await fx.settled();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(viewport: { width: number; height: number }) {
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
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        problems.push(`console: ${message.text()}`);
    });
    await page.goto(`${server.url}/dashboard#/apps/${appId}`);
    await page.getByLabel('Admin token').fill(server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    return { context, page, foreign, problems };
  }

  /** `data-*` numbers of the chart's marks, as the page drew them. */
  function marks(page: Page, selector: string, fields: string[]) {
    return page
      .locator(selector)
      .evaluateAll(
        (elements, names) =>
          elements.map((e) => Object.fromEntries(names.map((n) => [n, e.getAttribute(`data-${n}`)]))),
        fields,
      );
  }

  it("draws the API's numbers: the overview card, the MRR line, the movement bars and the plans", async () => {
    const { context, page, foreign, problems } = await open({ width: 1280, height: 900 });
    const overview = page.getByRole('region', { name: 'Overview' });
    await overview.getByText('$70.00').waitFor();
    expect((await overview.locator('dd').allInnerTexts()).map((t) => t.trim())).toEqual(['$70.00', '3']);

    await page.getByRole('link', { name: 'See the analytics' }).click();
    // Exact: the movements chart, once drawn, is labelled "… Over the range: …" too.
    await page.getByLabel('Interval', { exact: true }).selectOption('day');
    await page.getByLabel('Range', { exact: true }).selectOption('30d');
    const from = day(-29);
    const to = day(0);
    await eventually(
      async () =>
        (await page.locator('.mrr-chart circle.point').first().getAttribute('data-start')) === from
          ? true
          : undefined,
      { what: 'the chart of the last 30 days by day', timeoutMs: STEP_TIMEOUT_MS },
    );
    const api = await fx.analytics(apiKey, { from, to, interval: 'day' });
    expect(api.status).toBe(200);

    const points = await marks(page, '.mrr-chart circle.point', ['start', 'mrr']);
    expect(points).toEqual(
      api.body.periods.map((p: { start: string; mrr: number }) => ({ start: p.start, mrr: String(p.mrr) })),
    );
    expect(points.at(-1)).toEqual({ start: to, mrr: '7000' });

    const bars = await marks(page, '.movements-chart rect.bar', ['start', 'field', 'value']);
    const expected = api.body.periods.flatMap((p: Record<string, number | string>) =>
      ['newMrr', 'expansionMrr', 'reactivationMrr', 'contractionMrr', 'churnedMrr']
        .filter((field) => p[field] !== 0)
        .map((field) => ({ start: p.start, field, value: String(p[field]) })),
    );
    expect(bars).toEqual(expected);
    expect(bars).toEqual(
      expect.arrayContaining([
        { start: to, field: 'newMrr', value: '5000' },
        { start: to, field: 'expansionMrr', value: '2000' },
      ]),
    );
    expect(await marks(page, '.plans-chart rect.bar', ['plan', 'mrr'])).toEqual([
      { plan: 'pro', mrr: '6000' },
      { plan: 'basic', mrr: '1000' },
    ]);
    expect(api.body.byPlan).toEqual([
      { planId: 'pro', mrr: 6_000, activeSubscriptions: 2 },
      { planId: 'basic', mrr: 1_000, activeSubscriptions: 1 },
    ]);
    // The numbers under the charts, and the charts' text alternatives.
    const lastRow = page.locator(`table.numbers tr[data-start="${to}"] td`);
    expect((await lastRow.allInnerTexts()).slice(0, 6)).toEqual([
      '$70.00',
      '3',
      '0',
      '$50.00',
      '$20.00',
      '$0.00',
    ]);
    expect(await page.getByRole('img', { name: /^MRR MRR from \$0\.00/ }).count()).toBe(1);
    expect(
      await page
        .getByRole('img', { name: /^MRR movements Over the range: New \$50\.00, Expansion \$20\.00/ })
        .count(),
    ).toBe(1);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'app-analytics.png'), fullPage: true });

    expect(foreign).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('fits a phone: the charts scale to the screen and the page does not scroll sideways', async () => {
    const { context, page, foreign, problems } = await open({ width: 390, height: 844 });
    await page.goto(`${server.url}/dashboard#/apps/${appId}/analytics`);
    await page.locator('.mrr-chart circle.point').first().waitFor();
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      viewport: window.innerWidth,
      chart: document.querySelector('.mrr-chart')!.getBoundingClientRect().width,
    }));
    expect(widths.page).toBeLessThanOrEqual(widths.viewport);
    expect(widths.chart).toBeGreaterThan(250);
    expect(widths.chart).toBeLessThanOrEqual(widths.viewport);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'app-analytics-phone.png'), fullPage: true });
    expect(foreign).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
