/**
 * Benchmark of the dashboard's weight and first load: the JavaScript the page loads (raw and as served,
 * gzipped), then BENCH_ROUNDS first loads on loopback in Debian's Chromium, each in a fresh browser
 * context (empty cache): from navigation to the sign-in form ready, and, signed in (the token put in
 * sessionStorage before the page runs), to the apps list drawn from GraphQL. Tollgate runs against a
 * scratch database on DATABASE_URL's server with BENCH_APPS apps. Prints medians, the spread and the
 * machine's load; exit code 1 when the median signed-in first load is ≥ 1 s.
 *
 *   npm run build && node bench/dashboard.js   # BENCH_ROUNDS=15 BENCH_APPS=20 CHROMIUM_PATH=/usr/bin/chromium
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { createApp, loadavg, median, startTollgate, withScratchDatabase } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const APPS = Number(process.env.BENCH_APPS ?? 20);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const GOAL_MS = 1000;
const BUILD = fileURLToPath(new URL('../dist/dashboard', import.meta.url));

function files(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    return statSync(full).isDirectory() ? files(full) : [full];
  });
}

function weights() {
  const scripts = files(BUILD).filter((f) => f.endsWith('.js'));
  let raw = 0;
  let gzipped = 0;
  for (const file of scripts) {
    const body = readFileSync(file);
    raw += body.length;
    // As the server sends it (src/dashboard/dashboard.rest.ts gzips at level 9).
    gzipped += gzipSync(body, { level: 9 }).length;
  }
  return { files: scripts.length, raw, gzipped };
}

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const spread = (values) =>
  `min ${Math.min(...values).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms`;

async function firstLoad(browser, url, token) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  if (token) {
    await context.addInitScript((value) => sessionStorage.setItem('tollgate.dashboard.token', value), token);
  }
  const page = await context.newPage();
  const started = performance.now();
  await page.goto(`${url}/dashboard`, { waitUntil: 'commit' });
  const ready = token
    ? page.getByRole('table', { name: 'Apps' })
    : page.getByRole('button', { name: 'Sign in' });
  await ready.waitFor({ state: 'visible', timeout: 10_000 });
  const elapsed = performance.now() - started;
  await context.close();
  return elapsed;
}

async function main() {
  const weight = weights();
  console.log(
    `dashboard JavaScript: ${weight.files} modules, ${kb(weight.raw)} raw, ${kb(weight.gzipped)} gzipped ` +
      `(Preact, hooks and htm included); CSS ${kb(gzipSync(readFileSync(path.join(BUILD, 'dashboard.css'))).length)} gzipped`,
  );
  await withScratchDatabase('bench_dashboard', async (databaseUrl) => {
    const tollgate = await startTollgate(databaseUrl);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--headless',
        '--disable-gpu',
        '--disable-background-networking',
        '--no-first-run',
      ],
    });
    try {
      for (let i = 0; i < APPS; i += 1) await createApp(tollgate.url, tollgate.adminToken, `bench-${i}`);
      // One warm-up of each kind: the browser's own start and the server's first GraphQL are not the page's.
      await firstLoad(browser, tollgate.url);
      await firstLoad(browser, tollgate.url, tollgate.adminToken);
      const signIn = [];
      const signedIn = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        signIn.push(await firstLoad(browser, tollgate.url));
        signedIn.push(await firstLoad(browser, tollgate.url, tollgate.adminToken));
      }
      console.log(
        `first load to the sign-in form: median ${median(signIn).toFixed(0)} ms (${spread(signIn)})`,
      );
      console.log(
        `first load to the apps list (${APPS} apps, signed in): median ${median(signedIn).toFixed(0)} ms ` +
          `(${spread(signedIn)})`,
      );
      console.log(`rounds ${ROUNDS}, empty cache each; load average ${loadavg()}`);
      if (median(signedIn) >= GOAL_MS) {
        console.log(`goal missed: the signed-in first load should take under ${GOAL_MS} ms`);
        process.exitCode = 1;
      }
    } finally {
      await browser.close();
      await tollgate.stop();
    }
  });
}

await main();
