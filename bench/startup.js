/**
 * Benchmark of a production start: `node dist/src/main.js serve` with NODE_ENV=production against an
 * already migrated database, timed from spawn to the first `200` of `/readyz`, BENCH_ROUNDS times,
 * interleaved with a floor: a bare `node` process that opens a `pg` connection and answers `/readyz`
 * from node:http (what any Node service pays before doing anything of its own). Then, on the last
 * Tollgate start, a load of BENCH_LOAD_SECONDS seconds on the hot paths (entitlement checks with a
 * session and an API key, auth/session, GraphQL checkEntitlement) at 10 connections, after which the
 * process's resident memory (VmRSS) is read.
 *
 * Tollgate runs with NODE_COMPILE_CACHE and NODE_OPTIONS as the image sets them (the Dockerfile's
 * NODE_OPTIONS unless BENCH_NODE_OPTIONS is given): the first start fills the cache.
 * Everything on loopback; Stripe and SMTP point at ports nothing listens on (a start needs neither).
 * A scratch database on DATABASE_URL's server (else postgres://postgres@127.0.0.1:5432/postgres) is
 * dropped afterwards. Prints medians, spread and the machine's load; exit code 1 when the median start
 * is ≥ 2 s or RSS after the load is ≥ 250 MB.
 *
 * BENCH_COMPARE=<dir> also starts, beside the last Tollgate, one from <dir>/dist (another build of this
 * repository, e.g. a copy of dist/ made before a change, beside a package.json, schema/ and a node_modules
 * link), gives both the same load, each kind on one then the other, and reads the RSS of both.
 * BENCH_COMPARE_NODE_OPTIONS=… runs that second Tollgate (this build, without BENCH_COMPARE) with that
 * NODE_OPTIONS instead of BENCH_NODE_OPTIONS, to measure what a Node or V8 flag does to memory.
 *
 *   node bench/startup.js   # BENCH_ROUNDS=5 BENCH_LOAD_SECONDS=10 BENCH_COMPARE=…
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import autocannon from 'autocannon';
import pg from 'pg';
import { imageNodeOptions } from './support.js';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BENCH_METRICS_TOKEN = randomBytes(24).toString('hex');
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const READY_TIMEOUT_MS = 30_000;
const root = fileURLToPath(new URL('..', import.meta.url));
const COMPARE_NODE_OPTIONS = process.env.BENCH_COMPARE_NODE_OPTIONS;
const COMPARE = process.env.BENCH_COMPARE
  ? path.resolve(process.env.BENCH_COMPARE)
  : COMPARE_NODE_OPTIONS !== undefined
    ? root
    : undefined;
const compileCache = mkdtempSync(path.join(tmpdir(), 'tollgate-compile-cache-'));
const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;

if (process.argv[2] === '--floor') await floor();
else await main();

async function main() {
  // Signals end the process without its 'exit' event, which is what stops the child processes.
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const name = `tollgate_bench_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  try {
    const seeded = await seed(url);
    console.log(
      `${ROUNDS} interleaved starts each, then ${LOAD_SECONDS} s of hot-path load; load before: ${loadavg()}\n`,
    );
    const times = { tollgate: [], floor: [] };
    let last;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const kind of ['tollgate', 'floor']) {
        const started = await start(kind, url);
        times[kind].push(started.ms);
        console.log(
          `round ${round}  ${kind.padEnd(9)} ready in ${started.ms.toFixed(0).padStart(5)} ms   RSS ${mb(started.rss())}`,
        );
        if (kind === 'tollgate' && round === ROUNDS) last = started;
        else await started.stop();
      }
    }
    const compared = COMPARE
      ? await start(
          'tollgate',
          url,
          COMPARE,
          COMPARE_NODE_OPTIONS ?? process.env.BENCH_NODE_OPTIONS ?? imageNodeOptions(),
        )
      : undefined;
    const idle = last.rss();
    const idleMemory = await memoryBreakdown(last.url);
    const comparedIdle = compared?.rss();
    await load(compared ? [last.url, compared.url] : [last.url], seeded);
    const loaded = last.rss();
    const memory = await memoryBreakdown(last.url);
    await last.stop();
    if (compared) {
      const comparedLoaded = compared.rss();
      const comparedMemory = await memoryBreakdown(compared.url);
      await compared.stop();
      console.log(
        `\ncompared build (${COMPARE}): RSS ${mb(comparedIdle)} after start, ${mb(comparedLoaded)} after the ` +
          `same load; from /metrics after the load: ${comparedMemory}`,
      );
    }
    console.log(`\nload after: ${loadavg()}`);
    const tollgate = median(times.tollgate);
    console.log(
      `start to /readyz: Tollgate median ${tollgate.toFixed(0)} ms (${spread(times.tollgate)}; ` +
        `the first, with an empty compile cache: ${times.tollgate[0].toFixed(0)} ms), ` +
        `floor median ${median(times.floor).toFixed(0)} ms (${spread(times.floor)})`,
    );
    console.log(`Tollgate RSS: ${mb(idle)} after start, ${mb(loaded)} after ${LOAD_SECONDS} s of load`);
    console.log(`  from /metrics: after start ${idleMemory}; after the load ${memory}`);
    const met = tollgate < 2000 && loaded < 250 * 1024;
    console.log(`target (start < 2 s, RSS after load < 250 MB): ${met ? 'met' : 'NOT met'}`);
    process.exitCode = met ? 0 : 1;
  } finally {
    rmSync(compileCache, { recursive: true, force: true });
    await dropDatabase(SERVER_URL, name);
  }
}

/** Migrates, then an app with plans, customers with sessions, and an API key for the load. */
async function seed(url) {
  const { connect, migrate } = await import(dist('db.js'));
  const { hashSecret, randomSecret, SESSION_TOKEN_PREFIX, API_KEY_PREFIX } = await import(
    dist('core/tokens.js')
  );
  const orm = await connect(url);
  try {
    await migrate(orm);
  } finally {
    await orm.close(true);
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`insert into app (id, name) values ('app_bench', 'bench')`);
    await client.query(
      `insert into plan (id, app_id, slug, name, is_default, features) values
         ('pln_free', 'app_bench', 'free', 'Free', true, '{"sso": false}'),
         ('pln_pro', 'app_bench', 'pro', 'Pro', false, '{"sso": true}')`,
    );
    const tokens = Array.from({ length: 100 }, () => randomSecret(SESSION_TOKEN_PREFIX));
    for (const [i, token] of tokens.entries()) {
      await client.query(
        `insert into customer (id, app_id, email, email_lower) values ($1, 'app_bench', $2, $2)`,
        [`cus_bench_${i}`, `bench-${i}@example.com`],
      );
      await client.query(
        `insert into session (id, app_id, customer_id, token_hash, expires_at)
           values ($1, 'app_bench', $2, $3, now() + interval '1 day')`,
        [`ses_bench_${i}`, `cus_bench_${i}`, hashSecret(token)],
      );
    }
    const apiKey = randomSecret(API_KEY_PREFIX);
    await client.query(
      `insert into api_key (id, app_id, key_hash, prefix) values ('key_bench', 'app_bench', $1, 'tg_sk_bench')`,
      [hashSecret(apiKey)],
    );
    return { tokens, apiKey };
  } finally {
    await client.end();
  }
}

/** Spawns one process and polls `/readyz` until it answers 200. */
async function start(
  kind,
  url,
  from = root,
  nodeOptions = process.env.BENCH_NODE_OPTIONS ?? imageNodeOptions(),
) {
  const port = await freePort();
  const closed = await freePort();
  const env =
    kind === 'tollgate'
      ? {
          PATH: process.env.PATH,
          NODE_ENV: 'production',
          DATABASE_URL: url,
          HOST: '127.0.0.1',
          PORT: String(port),
          PUBLIC_BASE_URL: `https://127.0.0.1:${port}`,
          // Production requires HTTPS: the bench plays the TLS-terminating proxy on loopback (see load()).
          TRUST_PROXY: 'loopback',
          ADMIN_TOKEN: randomBytes(24).toString('hex'),
          METRICS_TOKEN: BENCH_METRICS_TOKEN,
          STRIPE_SECRET_KEY: 'sk_test_bench',
          STRIPE_WEBHOOK_SECRET: `whsec_${randomBytes(16).toString('hex')}`,
          STRIPE_API_BASE: `http://127.0.0.1:${closed}`,
          SMTP_URL: `smtp://127.0.0.1:${closed}`,
          MAIL_FROM: 'bench@example.com',
          WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
          RATE_LIMIT_SESSION: '1000000000',
          RATE_LIMIT_API_KEY: '1000000000',
          LOG_LEVEL: 'info',
          // As the image sets it (Dockerfile): round 1 fills the cache, later rounds start from it.
          NODE_COMPILE_CACHE: compileCache,
          ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
        }
      : { PATH: process.env.PATH, DATABASE_URL: url, PORT: String(port) };
  const args =
    kind === 'tollgate' ? ['dist/src/main.js', 'serve'] : [fileURLToPath(import.meta.url), '--floor'];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: from, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const stopChild = () => child.kill('SIGKILL');
  process.once('exit', stopChild);
  const target = `http://127.0.0.1:${port}`;
  while (true) {
    if (child.exitCode !== null) throw new Error(`${kind} exited (${child.exitCode}) before it was ready`);
    if (performance.now() - t0 > READY_TIMEOUT_MS)
      throw new Error(`${kind} not ready in ${READY_TIMEOUT_MS} ms`);
    const ok = await fetch(`${target}/readyz`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const ms = performance.now() - t0;
  return {
    ms,
    url: target,
    rss: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]),
    stop: async () => {
      process.removeListener('exit', stopChild);
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
}

/** Where the process's memory is, as its own /metrics reports it (V8 heap, off-heap buffers). */
async function memoryBreakdown(target) {
  const text = await fetch(`${target}/metrics`, {
    headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` },
  }).then((res) => res.text());
  const value = (name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  const megabytes = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
  return [
    `heap used ${megabytes(value('nodejs_heap_size_used_bytes'))}`,
    `heap total ${megabytes(value('nodejs_heap_size_total_bytes'))} (new space ${megabytes(
      value('nodejs_heap_space_size_total_bytes\\{space="new"\\}'),
    )}, old space ${megabytes(value('nodejs_heap_space_size_total_bytes\\{space="old"\\}'))})`,
    `external ${megabytes(value('nodejs_external_memory_bytes'))}`,
  ].join(', ');
}

/** The hot paths in turn, 10 connections each, LOAD_SECONDS in all (on each target, one after the other). */
async function load(targets, { tokens, apiKey }) {
  const query = `query($c: ID) { checkEntitlement(feature: "sso", customerId: $c) { allowed } }`;
  const kinds = [
    (i) => ({ path: '/v1/entitlements/check/sso', headers: { authorization: `Bearer ${tokens[i]}` } }),
    (i) => ({
      path: `/v1/entitlements/check/sso?customerId=cus_bench_${i}`,
      headers: { authorization: `Bearer ${apiKey}` },
    }),
    (i) => ({ path: '/v1/apps/app_bench/auth/session', headers: { authorization: `Bearer ${tokens[i]}` } }),
    (i) => ({
      path: '/graphql',
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables: { c: `cus_bench_${i}` } }),
    }),
  ];
  for (const request of kinds) {
    for (const target of targets) {
      let next = 0;
      const result = await autocannon({
        url: target,
        connections: 10,
        duration: Math.max(1, Math.round(LOAD_SECONDS / kinds.length)),
        setupClient: (client) => {
          const { headers, ...rest } = request(next++ % tokens.length);
          client.setRequests([
            { method: 'GET', ...rest, headers: { ...headers, 'x-forwarded-proto': 'https' } },
          ]);
        },
      });
      const bad = result.non2xx + result.errors + result.timeouts;
      if (bad > 0) throw new Error(`${bad} answers were not 200 during the load`);
    }
  }
}

/** Child: the floor, a bare server that is ready once its database connection is. */
async function floor() {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  const server = createServer(async (_req, res) => {
    await client.query('select 1');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}');
  });
  server.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => {
    server.close();
    client.end().finally(() => process.exit(0));
  });
}

function mb(kb) {
  return `${(kb / 1024).toFixed(0)} MB`;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function spread(values) {
  return `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;
}

function loadavg() {
  return readFileSync('/proc/loadavg', 'utf8').trim();
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}
