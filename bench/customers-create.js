/**
 * What the per-app customer count costs `POST /v1/customers`: throughput with the count's insert trigger
 * enabled and disabled, in short interleaved runs (on, off, then off, on, and so on), against one app
 * of BENCH_CUSTOMERS customers (default 100 000) on a scratch database.
 *
 * Tollgate is the built code from dist/ (`npm run build` first) in a child process, autocannon runs in
 * another (BENCH_CONNECTIONS=10, loopback, BENCH_DURATION seconds per run). BENCH_PROCESSES Tollgate
 * processes one after the other, each with its own database sessions (whose process ids chose the
 * counter shard before migration Migration20261125120000), each measured for BENCH_PAIRS pairs of runs.
 * Short runs, many pairs: on a shared machine the throughput drifts within seconds, so only runs
 * next to each other are compared. Per run it prints throughput, p50, the CPU time per request of
 * Tollgate's database sessions and of its process (from /proc, so the database must run on this
 * machine; that share drifts far less than throughput), the WAL written per request, the load average,
 * and what Tollgate's database sessions were waiting on (sampled every 50 ms). Then the
 * medians and spreads, the median of the pairs' ratios on / off (the figure to quote) with their
 * quartiles, and a check that the count is exact: it must have grown by exactly the customers created
 * while the trigger was enabled. The database is dropped at the end, whatever happens.
 *
 *   node bench/customers-create.js    # BENCH_CUSTOMERS=100000 BENCH_DURATION=3 BENCH_PROCESSES=3
 *                                     # BENCH_PAIRS=6 BENCH_CONNECTIONS=10
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import {
  createApp,
  loadavg,
  loadInChild,
  median,
  percentile,
  startTollgate,
  withScratchDatabase,
} from './support.js';

const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 100_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 3);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const WARM_UP = 3;
/** A clock tick of /proc/<pid>/stat, in µs (USER_HZ is 100 on Linux). */
const TICK_US = 10_000;

await withScratchDatabase('tollgate_bench_create', async (url) => {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const app = await withTollgate(url, (tollgate) =>
      createApp(tollgate.url, tollgate.adminToken, 'bench create'),
    );
    await seed(db, app.appId);
    console.log(
      `POST /v1/customers into an app of ${CUSTOMERS} customers; autocannon: ${CONNECTIONS} connections, ` +
        `${DURATION} s per run, ${PROCESSES} Tollgate processes × ${PAIRS} pairs (on, off; off, on; …), loopback`,
    );
    console.log(`load before: ${loadavg()}`);
    const runs = { on: [], off: [] };
    const firsts = [];
    try {
      for (let instance = 0; instance < PROCESSES; instance++) {
        await withTollgate(url, async (tollgate) => {
          await db.query('alter table customer enable trigger customer_count_insert');
          await post(tollgate.url, app.apiKey, 'warm', WARM_UP); // connections, JIT, buffers
          await settled(db);
          console.log(`process ${instance + 1}: ${await sessions(db)}`);
          for (let pair = 0; pair < PAIRS; pair++) {
            // Which state goes first alternates, so neither always follows the warm-up or the other.
            const order = pair % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
            firsts.push(order[0]);
            for (const state of order) {
              await db.query(
                `alter table customer ${state === 'on' ? 'enable' : 'disable'} trigger customer_count_insert`,
              );
              const r = await measuredRun(db, url, tollgate, app.apiKey, state);
              runs[state].push(r);
              console.log(
                `  ${state.padEnd(3)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  ` +
                  `CPU/request: database ${r.dbCpuUs.toFixed(0)} µs, Tollgate ${r.nodeCpuUs.toFixed(0)} µs  ` +
                  `${r.walPerRequest.toFixed(0)} B WAL/request  load ${r.load}  waits: ${r.waits}`,
              );
            }
          }
        });
      }
    } finally {
      await db.query('alter table customer enable trigger customer_count_insert');
    }
    for (const state of ['on', 'off']) {
      const rps = runs[state].map((r) => Math.round(r.rps));
      console.log(
        `trigger ${state.padEnd(3)}: median ${median(rps)} req/s (spread ${Math.min(...rps)}–${Math.max(...rps)}), ` +
          `p50 ${median(runs[state].map((r) => r.p50))} ms, CPU/request: database ` +
          `${median(runs[state].map((r) => r.dbCpuUs)).toFixed(0)} µs, Tollgate ` +
          `${median(runs[state].map((r) => r.nodeCpuUs)).toFixed(0)} µs, WAL ` +
          `${median(runs[state].map((r) => r.walPerRequest)).toFixed(0)} B (medians), ` +
          `${runs[state].reduce((n, r) => n + r.bad, 0)} not 201`,
      );
    }
    const ratios = runs.on.map((r, i) => r.rps / runs.off[i].rps);
    console.log(
      `throughput with the count / without, median of ${ratios.length} pairs: ${median(ratios).toFixed(2)} ` +
        `(quartiles ${percentile(ratios, 25).toFixed(2)}–${percentile(ratios, 75).toFixed(2)}, ` +
        `range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); ratio of the medians ` +
        `${(median(runs.on.map((r) => r.rps)) / median(runs.off.map((r) => r.rps))).toFixed(2)}`,
    );
    // Pairs alternate which state runs first: a drift through the run (caches filling, other load)
    // shows as a difference between the two halves, and cancels out of the median of all pairs.
    const byOrder = (first) => median(ratios.filter((_, i) => firsts[i] === first)).toFixed(2);
    console.log(`  median ratio of the pairs run on first: ${byOrder('on')}, off first: ${byOrder('off')}`);
    console.log(`load after: ${loadavg()}`);
    await assertExactCount(db, app.appId);
    if ([...runs.on, ...runs.off].some((r) => r.bad > 0)) process.exitCode = 1;
  } finally {
    await db.end();
  }
});

/** Runs `fn` with a Tollgate process of its own, stopped afterwards whatever happens. */
async function withTollgate(url, fn) {
  const tollgate = await startTollgate(url, { RATE_LIMIT_API_KEY: '1000000000' });
  try {
    return await fn(tollgate);
  } finally {
    await tollgate.stop();
  }
}

/**
 * The app's customers, one INSERT … SELECT (counted by the statement trigger), then vacuum analyze. The
 * two large indexes are built after loading (several times faster than row by row), from their
 * definitions in the migrated schema.
 */
async function seed(db, appId) {
  const { rows: indexes } = await db.query(
    `select indexname, indexdef from pg_indexes
      where tablename = 'customer' and indexname in ('customer_app_id_created_at_id_index', 'customer_app_id_email_lower_trgm_index')`,
  );
  for (const { indexname } of indexes) await db.query(`drop index ${indexname}`);
  await db.query(
    `insert into customer (id, app_id, email, email_lower, metadata, created_at, updated_at)
     select 'cus_seed' || n, $1, e, e, '{}', ts, ts
       from generate_series(1, $2::int) as n,
            lateral (select 'user' || n || '@gmail.com' as e,
                            timestamptz '2024-01-01' + n * interval '10 seconds' as ts) as x`,
    [appId, CUSTOMERS],
  );
  for (const { indexdef } of indexes) await db.query(indexdef);
  await db.query('vacuum analyze customer');
  await db.query('vacuum analyze customer_count');
}

function post(target, apiKey, tag, duration) {
  return loadInChild({
    url: `${target}/v1/customers`,
    method: 'POST',
    connections: CONNECTIONS,
    duration,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    idReplacement: true,
    body: JSON.stringify({ email: `${tag}-[<id>]@post.example` }),
  });
}

/**
 * Waits (at most 5 s) until no Tollgate session has been in a transaction for 200 ms: a request still
 * running when autocannon stops would otherwise insert after the trigger is switched, and be counted in
 * the wrong state.
 */
async function settled(db) {
  const deadline = Date.now() + 5000;
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    const { rows } = await db.query(
      `select count(*)::int as busy from pg_stat_activity
        where application_name = 'tollgate' and datname = current_database() and state <> 'idle'`,
    );
    if (rows[0].busy > 0) quietSince = Date.now();
    else if (Date.now() - quietSince >= 200) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One run, with the WAL it wrote and what Tollgate's sessions waited on meanwhile. */
async function measuredRun(db, url, tollgate, apiKey, state) {
  const load = loadavg().split(' ')[0];
  const backends = await backendPids(db);
  const cpuBefore = { db: cpuTicks(backends), node: cpuTicks([tollgate.pid]) };
  const before = (await db.query('select pg_current_wal_lsn() as lsn')).rows[0].lsn;
  const waits = new Map();
  let sampling = true;
  const sampler = (async () => {
    const sampleDb = new pg.Client({ connectionString: url });
    await sampleDb.connect();
    try {
      while (sampling) {
        const { rows } = await sampleDb.query(
          `select coalesce(wait_event_type || ':' || wait_event, 'cpu') as w
             from pg_stat_activity
            where application_name = 'tollgate' and datname = current_database() and state = 'active'`,
        );
        for (const { w } of rows) waits.set(w, (waits.get(w) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await sampleDb.end();
    }
  })();
  const result = await post(tollgate.url, apiKey, state, DURATION);
  sampling = false;
  await sampler;
  await settled(db);
  const cpu = { db: cpuTicks(backends) - cpuBefore.db, node: cpuTicks([tollgate.pid]) - cpuBefore.node };
  const wal = (await db.query('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 as bytes', [before]))
    .rows[0].bytes;
  const created = result.statusCodes['201']?.count ?? 0;
  const total = [...waits.values()].reduce((a, b) => a + b, 0) || 1;
  return {
    rps: result.rps,
    p50: result.p50,
    bad: result.requests - created + result.errors + result.timeouts,
    walPerRequest: wal / Math.max(created, 1),
    dbCpuUs: (cpu.db * TICK_US) / Math.max(created, 1),
    nodeCpuUs: (cpu.node * TICK_US) / Math.max(created, 1),
    load,
    waits: [...waits.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([w, n]) => `${w} ${Math.round((100 * n) / total)} %`)
      .join(', '),
  };
}

/** The server processes of Tollgate's database sessions (the bench runs on the database's machine). */
async function backendPids(db) {
  const { rows } = await db.query(
    `select pid from pg_stat_activity where application_name = 'tollgate' and datname = current_database()`,
  );
  return rows.map((r) => r.pid);
}

/** CPU time (user + system, in clock ticks) the processes have used so far; 0 for one that is gone. */
function cpuTicks(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      // Fields after the parenthesised command name: utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {}
  }
  return ticks;
}

/**
 * Tollgate's database sessions, how many distinct values of `pg_backend_pid() % 64` they have (the
 * shard each wrote before migration Migration20261125120000), and how many distinct shards they have
 * claimed since (advisory locks of class 1129535060). Sessions writing one shard wait for each other's
 * commit whenever they insert into the same app at the same time.
 */
async function sessions(db) {
  const { rows } = await db.query(
    `select count(*)::int as sessions, count(distinct a.pid % 64)::int as pid_shards,
            count(distinct l.objid)::int as claimed
       from pg_stat_activity a
       left join pg_locks l on l.pid = a.pid and l.locktype = 'advisory' and l.classid = 1129535060 and l.granted
      where a.application_name = 'tollgate' and a.datname = current_database()`,
  );
  const { sessions: n, pid_shards: byPid, claimed } = rows[0];
  return `${n} database sessions; ${byPid} distinct pid % 64, ${claimed} claimed shards`;
}

/** The count must have grown by exactly the customers created while its trigger was enabled. */
async function assertExactCount(db, appId) {
  const { rows } = await db.query(
    `select (select coalesce(sum(n), 0) from customer_count where app_id = $1)::int as counted,
            (select count(*) from customer where app_id = $1 and email not like 'off-%')::int as expected`,
    [appId],
  );
  const { counted, expected } = rows[0];
  if (counted !== expected) throw new Error(`the count is ${counted}, expected ${expected}`);
  console.log(`count exact: ${counted} (the seed and every customer created with the trigger enabled)`);
}
