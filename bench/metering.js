/**
 * Benchmark of metered consumption (`POST /v1/usage`) and the metered check
 * (`GET /v1/entitlements/check/:feature` on a metered feature), with session tokens.
 *
 * On a freshly seeded scratch database (DATABASE_URL's server, else postgres://postgres@127.0.0.1:5432/
 * postgres) it starts two servers in child processes, side by side:
 *   1. Tollgate, the built code from dist/ (`npm run build` first), with its whole middleware chain;
 *   2. a baseline: a minimal node:http server doing the same database work with `pg`: the session row,
 *      then the same one-statement consumption (the ledger's database function `tollgate_consume`, its
 *      own transaction), and for the check the same balance read (allowance and grants, no lock).
 * Each workload is measured in interleaved rounds (Tollgate, baseline, Tollgate, baseline…), each a
 * warm-up then a measured autocannon run on loopback, and the medians are reported:
 *   - spread: consumptions across BENCH_CUSTOMERS customers (each connection one customer's session);
 *   - hot: every connection consumes one customer's balance; afterwards the balance must be exact
 *     (usage rows = what the allowance counts as used = the 200 answers);
 *   - check: the metered check across the customers (Tollgate) vs the baseline's balance read.
 * Exit code 1 when a target is missed: spread ≥ 2 500/s, p99 < 10 ms and ≥ 0.5 × baseline; hot ≥
 * 1 000/s and exact; check ≥ baseline; any answer not 200.
 *
 *   node bench/metering.js    # BENCH_DURATION=5 BENCH_WARMUP=2 BENCH_ROUNDS=2 BENCH_CONNECTIONS=10
 *                             # BENCH_CUSTOMERS=1000
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import autocannon from 'autocannon';
import pg from 'pg';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 1000);
const FEATURE = 'calls';
// BENCH_WORKLOADS=check (comma-separated) measures only some workloads; the checks then judge only those.
const WORKLOADS = (process.env.BENCH_WORKLOADS ?? 'spread,hot,check').split(',');
const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;

const mode = process.argv[2];
if (mode === '--serve-tollgate') await serveTollgate(process.argv[3]);
else if (mode === '--serve-baseline') await serveBaseline(process.argv[3]);
else await main();

async function main() {
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const name = `tollgate_bench_metering_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  const servers = [];
  try {
    const { tokens, customers } = await seed(url);
    console.log(`seeded ${CUSTOMERS} customers on a default plan metering "${FEATURE}" (limit 1e9 a month)`);
    console.log(
      `autocannon: ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${WARMUP} s warm-up + ${DURATION} s measured, loopback`,
    );
    console.log(
      `load average before: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    for (const kind of ['tollgate', 'baseline']) servers.push(await start(kind, url));
    const [tollgate, baseline] = servers;

    const results = {};
    for (const workload of WORKLOADS) {
      const runs = { tollgate: [], baseline: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const server of [tollgate, baseline]) {
          const pick = workload === 'hot' ? [tokens[0]] : tokens;
          await load(server.url, workload, pick, WARMUP);
          const r = await load(server.url, workload, pick, DURATION);
          runs[server.kind].push(r);
        }
      }
      results[workload] = { tollgate: summary(runs.tollgate), baseline: summary(runs.baseline) };
      for (const kind of ['tollgate', 'baseline']) {
        const s = results[workload][kind];
        console.log(
          `${workload.padEnd(6)} ${kind.padEnd(9)} ${s.rps.toFixed(0).padStart(7)} req/s (median)   p50 ${s.p50} ms   p99 ${s.p99} ms   ${s.non200} not 200`,
        );
      }
    }
    const exact = results.hot
      ? await hotBalanceExact(url, customers[0])
      : { ok: true, detail: 'not measured' };
    console.log(
      `\nhot customer's balance exact (usage rows = allowance used): ${exact.ok} (${exact.detail})`,
    );
    console.log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );

    const s = results.spread;
    const h = results.hot;
    const c = results.check;
    const checks = [
      ...(s
        ? [
            ['spread ≥ 2 500/s', s.tollgate.rps >= 2500],
            ['spread p99 < 10 ms', s.tollgate.p99 < 10],
            ['spread ≥ 0.5 × baseline', s.tollgate.rps >= 0.5 * s.baseline.rps],
          ]
        : []),
      ...(h
        ? [
            ['hot ≥ 1 000/s', h.tollgate.rps >= 1000],
            ['hot balance exact', exact.ok],
          ]
        : []),
      ...(c ? [['check ≥ baseline balance read', c.tollgate.rps >= c.baseline.rps]] : []),
      [
        'every answer 200',
        Object.values(results).every((w) => w.tollgate.non200 === 0 && w.baseline.non200 === 0),
      ],
    ];
    const ratio = (w) => (w ? (w.tollgate.rps / w.baseline.rps).toFixed(2) : '-');
    console.log(`\nratios: spread ${ratio(s)}, hot ${ratio(h)}, check ${ratio(c)}`);
    for (const [what, met] of checks) console.log(`  ${met ? 'met    ' : 'NOT met'}  ${what}`);
    process.exitCode = checks.every(([, met]) => met) ? 0 : 1;
  } finally {
    for (const server of servers) await server.stop();
    await dropDatabase(SERVER_URL, name);
  }
}

function summary(runs) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    rps: median(runs.map((r) => r.requests.average)),
    p50: median(runs.map((r) => r.latency.p50)),
    p99: median(runs.map((r) => r.latency.p99)),
    non200: runs.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0),
  };
}

/** One autocannon run of a workload; each connection is one customer's session. */
function load(target, workload, tokens, duration) {
  let next = 0;
  const consume = workload !== 'check';
  return autocannon({
    url: consume ? `${target}/v1/usage` : `${target}/v1/entitlements/check/${FEATURE}`,
    method: consume ? 'POST' : 'GET',
    body: consume ? JSON.stringify({ feature: FEATURE }) : undefined,
    connections: CONNECTIONS,
    duration,
    setupClient: (client) => {
      client.setHeaders({
        authorization: `Bearer ${tokens[next++ % tokens.length]}`,
        'content-type': 'application/json',
      });
    },
  });
}

async function hotBalanceExact(url, customerId) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select (select coalesce(sum(amount), 0) from usage_record where subject_id = $1)::bigint as recorded,
              (select coalesce(sum(used), 0) from credit_bucket where subject_id = $1 and kind = 'allowance')::bigint as used`,
      [customerId],
    );
    const { recorded, used } = rows[0];
    return { ok: recorded === used && Number(recorded) > 0, detail: `${recorded} recorded, ${used} used` };
  } finally {
    await client.end();
  }
}

/** Migrates the scratch database and creates an app, a metered default plan, customers and sessions. */
async function seed(url) {
  const { connect, migrate, withContext } = await import(dist('db.js'));
  const { newId } = await import(dist('core/ids.js'));
  const { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } = await import(dist('core/tokens.js'));
  const { App } = await import(dist('modules/apps/app.entity.js'));
  const { Customer } = await import(dist('modules/customers/customer.entity.js'));
  const { Plan } = await import(dist('modules/plans/plan.entity.js'));
  const { Session } = await import(dist('modules/auth/session.entity.js'));
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
        features: { [FEATURE]: { limit: 1_000_000_000, reset: 'month' } },
      });
      const tokens = [];
      const customers = [];
      const expiresAt = new Date(Date.now() + 86_400_000);
      for (let i = 0; i < CUSTOMERS; i++) {
        const email = `bench-${i}@example.com`;
        const customer = em.create(Customer, { id: newId('cus'), app, email, emailLower: email });
        const token = randomSecret(SESSION_TOKEN_PREFIX);
        em.create(Session, { id: newId('ses'), app, customer, tokenHash: hashSecret(token), expiresAt });
        tokens.push(token);
        customers.push(customer.id);
      }
      await em.flush();
      return { tokens, customers };
    });
  } finally {
    await orm.close(true);
  }
}

async function start(kind, url) {
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
  return {
    kind,
    url: target,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
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
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
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

/** Child: the baseline. The session read and the same consumption statement as Tollgate's ledger. */
async function serveBaseline(url) {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  const SESSION = `select s.app_id, s.customer_id, p.features -> $2 as def
      from session s join plan p on p.app_id = s.app_id and p.is_default
     where s.token_hash = $1 and s.revoked_at is null and s.expires_at > now()`;
  // The same one-statement consumption Tollgate runs (the database function of its ledger).
  const CONSUME = `select outcome, remaining from tollgate_consume($1, $2, $3, $4, $5, $5, $5, null, $6, $7, 1,
      $8, $9, $9, null, null, null, '{}', now(), false, null)`;
  const READ = `select kind, amount, spent, used from credit_bucket
     where subject_id = $1 and feature = $2
       and ((kind = 'grant' and voided_at is null and (expires_at is null or expires_at > now())) or (kind <> 'grant' and period_end = $3))`;
  const id = (prefix) => `${prefix}_${randomBytes(20).toString('hex').slice(0, 32)}`;
  const period = () => {
    const now = new Date();
    return {
      start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
    };
  };
  const server = createServer(async (req, res) => {
    const auth = req.headers.authorization ?? '';
    const hash = createHash('sha256').update(auth.slice(7)).digest('hex');
    let body = '';
    for await (const chunk of req) body += chunk;
    const client = await pool.connect();
    try {
      const { start: from, end } = period();
      const consume = req.method === 'POST';
      const feature = consume ? JSON.parse(body).feature : FEATURE;
      const { rows } = await client.query({ name: 'session', text: SESSION, values: [hash, feature] });
      if (rows.length === 0) {
        res.writeHead(401).end();
        return;
      }
      const { app_id: appId, customer_id: customerId, def } = rows[0];
      if (!consume) {
        const read = await client.query({ name: 'read', text: READ, values: [customerId, feature, end] });
        let used = 0;
        let spent = 0;
        for (const r of read.rows) {
          if (r.kind !== 'allowance') continue;
          used = Number(r.used);
          spent = Number(r.spent);
        }
        const remaining = def.limit - spent;
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            feature,
            allowed: remaining >= 1,
            value: def.limit,
            balance: { limit: def.limit, granted: 0, used, remaining, resetsAt: end.toISOString() },
          }),
        );
        return;
      }
      const usageId = id('use');
      const consumed = await client.query({
        name: 'consume',
        text: CONSUME,
        values: [id('bkt'), id('bkt'), usageId, appId, customerId, feature, def.limit, from, end],
      });
      const { outcome, remaining } = consumed.rows[0];
      if (outcome !== 'recorded') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"allowed":false}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: usageId,
          feature,
          amount: 1,
          allowed: true,
          balance: { remaining: Number(remaining) - 1 },
        }),
      );
    } catch (error) {
      console.error(error);
      res.writeHead(500).end();
    } finally {
      client.release();
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
