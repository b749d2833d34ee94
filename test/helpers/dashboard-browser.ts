import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.js';
import { eventually } from './eventually.js';
import type { TestServer } from './server.js';

/**
 * The dashboard in Debian's Chromium, for the browser tests: pages opened at a screen size, each watched
 * for requests leaving the origin (refused and listed), script errors (a CSP violation included) and
 * answers of 400 or more for anything but the API (a missing file, the favicon's included); waits on
 * what a page shows; screenshots. `check()` after each test fails it on any of these.
 */

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };
/** How long a page may take to show what a step waits for (generous: the machine may be busy). */
export const STEP_TIMEOUT_MS = 15_000;

/** Where screenshots go: test-results/dashboard/ (ignored by git) unless DASHBOARD_SCREENSHOTS names a folder. */
export const SCREENSHOTS =
  process.env.DASHBOARD_SCREENSHOTS ?? path.resolve(import.meta.dirname, '../../test-results/dashboard');

export interface DashboardPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Requests to anywhere but this Tollgate. */
  readonly foreign: string[];
  /** Uncaught script errors and console errors. */
  readonly problems: string[];
  /** Answers of 400 or more to anything but `/graphql` (whose refusals the steps check). */
  readonly missing: string[];
}

export class DashboardBrowser {
  readonly #pages: DashboardPage[] = [];

  private constructor(
    private readonly server: TestServer,
    private readonly browser: Browser,
  ) {}

  static async launch(server: TestServer): Promise<DashboardBrowser> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    return new DashboardBrowser(
      server,
      await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS }),
    );
  }

  async open(viewport = DESKTOP): Promise<DashboardPage> {
    const context = await this.browser.newContext({ viewport });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    const page = await context.newPage();
    const opened: DashboardPage = { context, page, foreign: [], problems: [], missing: [] };
    const origin = `${this.server.url}/`;
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(origin)) return route.continue();
      opened.foreign.push(url);
      return route.abort();
    });
    page.on('response', (response) => {
      if (response.status() >= 400 && !response.url().endsWith('/graphql'))
        opened.missing.push(`${response.status()} ${response.url()}`);
    });
    page.on('pageerror', (error) => opened.problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      // The browser logs each HTTP error answer too: those are the `missing` list's, or expected refusals.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        opened.problems.push(`console: ${message.text()}`);
    });
    this.#pages.push(opened);
    return opened;
  }

  /** Opens the dashboard at `hash` (e.g. `#/apps/app_…/plans`) signed in with the admin token. */
  async signIn(page: Page, hash = ''): Promise<void> {
    await page.goto(`${this.server.url}/dashboard${hash}`);
    await page.getByLabel('Admin token').fill(this.server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('button', { name: 'Sign out' }));
  }

  /** The whole page as it is now, under SCREENSHOTS/<name>.png. */
  async shoot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  /** Closes the pages opened since the last call; fails when any saw a foreign request, an error or a missing file. */
  async check(): Promise<void> {
    for (const opened of this.#pages.splice(0)) {
      await opened.context.close();
      expect({ foreign: opened.foreign, problems: opened.problems, missing: opened.missing }).toEqual({
        foreign: [],
        problems: [],
        missing: [],
      });
    }
  }

  async close(): Promise<void> {
    await this.browser.close();
  }
}

export async function visible(locator: Locator): Promise<void> {
  await locator.waitFor({ state: 'visible', timeout: STEP_TIMEOUT_MS });
}

/** Waits until the control is disabled (a page re-renders after its message shows). */
export async function disabled(locator: Locator): Promise<void> {
  await eventually(async () => (await locator.isDisabled()) || undefined, {
    timeoutMs: STEP_TIMEOUT_MS,
    what: 'the control to be disabled',
  });
}

/** Waits until the element's text, spaces folded, contains `expected` (or matches it). */
export async function showsText(locator: Locator, expected: string | RegExp): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      const count = await locator.count();
      last = count === 1 ? (await locator.innerText()).replace(/\s+/g, ' ').trim() : `(${count} elements)`;
      return (typeof expected === 'string' ? last.includes(expected) : expected.test(last)) || undefined;
    },
    { timeoutMs: STEP_TIMEOUT_MS, what: `text ${String(expected)} (last seen: ${JSON.stringify(last)})` },
  );
}

export async function countIs(locator: Locator, count: number): Promise<void> {
  await eventually(async () => (await locator.count()) === count || undefined, {
    timeoutMs: STEP_TIMEOUT_MS,
    what: `${count} matching elements`,
  });
}

/**
 * How far anything on the page scrolls sideways: the page itself past the screen, or any box that
 * scrolls its content sideways (a wide table in a scrolling wrapper fits the page but still has to be
 * scrolled); 0 when nothing does. With it, the boxes that do, for the failure message.
 */
export async function sidewaysOverflow(page: Page): Promise<{ overflow: number; culprits: string[] }> {
  return page.evaluate(() => {
    const describe = (element: Element, by: number) =>
      `${by}px ${element.outerHTML.replace(/\s+/g, ' ').slice(0, 160)}`;
    const culprits: string[] = [];
    let overflow = document.documentElement.scrollWidth - window.innerWidth;
    if (overflow > 0) culprits.push(describe(document.documentElement, overflow));
    for (const element of document.querySelectorAll('body *')) {
      const by = element.scrollWidth - element.clientWidth;
      const style = getComputedStyle(element);
      if (by > 0 && /auto|scroll/.test(style.overflowX) && element.getClientRects().length > 0) {
        overflow = Math.max(overflow, by);
        culprits.push(describe(element, by));
      }
    }
    return { overflow: Math.max(overflow, 0), culprits };
  });
}
