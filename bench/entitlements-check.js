/**
 * Benchmark of the hot path `GET /v1/entitlements/check/:feature` with session tokens.
 *
 * In one run, on a freshly seeded scratch database (DATABASE_URL's server, else the machine's
 * postgres://postgres@127.0.0.1:5432/postgres), it measures with autocannon over loopback:
 *   1. Tollgate, the built code from dist/ (`npm run build` first), as it runs in production: the whole
 *      middleware chain (request log, credentials, rate limit, route, presenter) and its caches;
 *   2. a baseline: a minimal node:http server answering the same check with one hand-written SQL query
 *      through `pg` (session → newest entitling subscription or default plan → feature value).
 * Each server runs alone in its own child process; both must give the same answers for a sample of
 * sessions (half of them entitled), then get a warm-up run and a measured run.
 * It prints both throughputs, p50/p99 latencies and the ratio; exit code 1 when the target is missed
 * (Tollgate ≥ baseline throughput and p99 < 10 ms) or any response was not 200.
 *
 *   node bench/entitlements-check.js          # BENCH_DURATION=10 BENCH_CONNECTIONS=50 BENCH_CUSTOMERS=1000
 *                                             # BENCH_LOG_LEVEL=info BENCH_PROFILE_DIR=…
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import autocannon from 'autocannon';
import pg from 'pg';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 1000);
const FEATURE = 'sso';
const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;

const mode = process.argv[2];
if (mode === '--serve-tollgate') await serveTollgate(process.argv[3]);
else if (mode === '--serve-baseline') await serveBaseline(process.argv[3]);
else await main();

async function main() {
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const name = `tollgate_bench_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  try {
    const tokens = await seed(url);
    console.log(
      `seeded ${CUSTOMERS} customers (every other one on the Pro plan), ${tokens.length} session tokens`,
    );
    console.log(
      `autocannon: ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s measured, loopback\n`,
    );
    const tollgate = await measure('tollgate', url, tokens);
    const baseline = await measure('baseline', url, tokens);
    if (JSON.stringify(tollgate.sample) !== JSON.stringify(baseline.sample)) {
      throw new Error('Tollgate and the baseline answer the sample checks differently');
    }
    report(tollgate, baseline);
  } finally {
    await dropDatabase(SERVER_URL, name);
  }
}

/** Migrates the scratch database and creates an app, plans, customers, subscriptions and sessions. */
async function seed(url) {
  const { connect, migrate, withContext } = await import(dist('db.js'));
  const { newId } = await import(dist('core/ids.js'));
  const { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } = await import(dist('core/tokens.js'));
  const { App } = await import(dist('modules/apps/app.entity.js'));
  const { Customer } = await import(dist('modules/customers/customer.entity.js'));
  const { Plan } = await import(dist('modules/plans/plan.entity.js'));
  const { Session } = await import(dist('modules/auth/session.entity.js'));
  const { Subscription } = await import(dist('modules/subscriptions/subscription.entity.js'));
  const orm = await connect(url);
  try {
    await migrate(orm);
    return await withContext(orm, async () => {
      const em = orm.em;
      const app = em.create(App, { id: newId('app'), name: 'bench' });
      em.create(Plan, {
        id: newId('pln'),
        app,
        slug: 'free',
        name: 'Free',
        isDefault: true,
        features: { sso: false, projects: 1 },
      });
      const pro = em.create(Plan, {
        id: newId('pln'),
        app,
        slug: 'pro',
        name: 'Pro',
        stripePriceId: 'price_pro',
        features: { sso: true, projects: 100 },
      });
      const tokens = [];
      const expiresAt = new Date(Date.now() + 86_400_000);
      for (let i = 0; i < CUSTOMERS; i++) {
        const email = `bench-${i}@example.com`;
        const customer = em.create(Customer, { id: newId('cus'), app, email, emailLower: email });
        if (i % 2 === 0) {
          em.create(Subscription, {
            id: newId('sub'),
            app,
            customer,
            plan: pro,
            stripeSubscriptionId: `sub_bench_${i}`,
            stripeCustomerId: `cus_bench_${i}`,
            status: 'active',
          });
        }
        const token = randomSecret(SESSION_TOKEN_PREFIX);
        em.create(Session, { id: newId('ses'), app, customer, tokenHash: hashSecret(token), expiresAt });
        tokens.push(token);
      }
      await em.flush();
      return tokens;
    });
  } finally {
    await orm.close(true);
  }
}

/** Starts one server in a child process, warms it up, measures it, stops it. */
async function measure(kind, url, tokens) {
  const child = fork(fileURLToPath(import.meta.url), [`--serve-${kind}`, url], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    // BENCH_PROFILE_DIR=dir writes a V8 CPU profile of the Tollgate process there.
    execArgv:
      process.env.BENCH_PROFILE_DIR && kind === 'tollgate'
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
        : [],
  });
  const target = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}) before listening`)));
  });
  try {
    const sample = [];
    for (const token of tokens.slice(0, 20)) {
      const res = await fetch(`${target}/v1/entitlements/check/${FEATURE}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      sample.push([res.status, await res.json()]);
    }
    await run(target, tokens, WARMUP);
    const result = await run(target, tokens, DURATION);
    const non200 = result.non2xx + result.errors + result.timeouts;
    console.log(
      `${kind.padEnd(9)} ${result.requests.average.toFixed(0).padStart(7)} req/s   p50 ${result.latency.p50} ms   ` +
        `p99 ${result.latency.p99} ms   (${result.requests.total} requests, ${non200} not 200)`,
    );
    return {
      kind,
      sample,
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non200,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
  }
}

/** One autocannon run; each connection is one customer's session (50 connections → 50 sessions). */
function run(target, tokens, duration) {
  let next = 0;
  return autocannon({
    url: `${target}/v1/entitlements/check/${FEATURE}`,
    connections: CONNECTIONS,
    duration,
    setupClient: (client) => {
      client.setHeaders({ authorization: `Bearer ${tokens[next++ % tokens.length]}` });
    },
  });
}

function report(tollgate, baseline) {
  const ratio = tollgate.rps / baseline.rps;
  const meets = ratio >= 1 && tollgate.p99 < 10 && tollgate.non200 === 0 && baseline.non200 === 0;
  console.log(`\nratio (Tollgate / baseline throughput): ${ratio.toFixed(2)}`);
  console.log(
    `target (ratio ≥ 1.00, Tollgate p99 < 10 ms, every response 200): ${meets ? 'met' : 'NOT met'}`,
  );
  process.exitCode = meets ? 0 : 1;
}

/** Child: Tollgate from dist/, production-like settings, with a per-session limit the bench cannot reach. */
async function serveTollgate(url) {
  const { loadConfig } = await import(dist('config.js'));
  const { startServer } = await import(dist('server.js'));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const emulatorPort = await freePort();
  const config = loadConfig({
    DATABASE_URL: url,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    STRIPE_EMULATOR_PORT: String(emulatorPort),
    RATE_LIMIT_SESSION: '1000000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  });
  const server = await startServer(config, { seedDemo: false });
  process.on('SIGTERM', () => {
    server.close().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send(server.url);
}

/** Child: the baseline, one SQL statement per check. */
async function serveBaseline(url) {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  const sql = `
    select p.features -> $2 as value
      from session s
      left join plan p on p.id = coalesce(
        (select sub.plan_id from subscription sub
          where sub.app_id = s.app_id and sub.customer_id = s.customer_id and sub.organization_id is null
            and sub.status in ('trialing', 'active', 'past_due')
          order by sub.created_at desc, sub.id desc limit 1),
        (select d.id from plan d where d.app_id = s.app_id and d.is_default limit 1))
     where s.token_hash = $1 and s.revoked_at is null and s.expires_at > now() and s.organization_id is null`;
  const prefix = '/v1/entitlements/check/';
  const server = createServer(async (req, res) => {
    const auth = req.headers.authorization ?? '';
    if (!req.url.startsWith(prefix) || !auth.startsWith('Bearer ')) {
      res.writeHead(404).end();
      return;
    }
    const feature = decodeURIComponent(req.url.slice(prefix.length).split('?')[0]);
    const hash = createHash('sha256').update(auth.slice(7)).digest('hex');
    try {
      // A named statement is parsed and planned once per connection, as a tuned service would do.
      const { rows } = await pool.query({ name: 'check', text: sql, values: [hash, feature] });
      if (rows.length === 0) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"statusCode":401}');
        return;
      }
      const value = rows[0].value ?? null;
      const allowed =
        value === true ||
        (typeof value === 'number' && value > 0) ||
        (typeof value === 'string' && value !== '');
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ feature, allowed, value }));
    } catch {
      res.writeHead(500).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.on('SIGTERM', () => {
    server.close();
    pool.end().finally(() => process.exit(0));
  });
  process.send(`http://127.0.0.1:${server.address().port}`);
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
