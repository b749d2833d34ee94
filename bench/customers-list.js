/**
 * Benchmark of `GET /v1/customers` on large apps, and of `POST /v1/customers` with and without the
 * per-app count's trigger.
 *
 * On a scratch database (DATABASE_URL's server, else postgres://postgres@127.0.0.1:5432/postgres) it
 * seeds two apps of BENCH_CUSTOMERS customers each (default 1 000 000) with e-mails of known shares:
 * `user<n>@gmail.com` (89 %), `…@example.org` (10 %), `…@acme.io` (1 %), so `r99999` matches 11,
 * `acme` 1 %, `example` 10 % and `gmail` 89 % of an app. Before any figure, it asserts with EXPLAIN that
 * each list query uses the index it is meant to use at this size.
 * Then, per request:
 *   - cold: one customer is inserted (the app's write version moves, so nothing Tollgate remembers about
 *     the app's lists is valid), then one request alone to Tollgate and one to the baseline: what the
 *     first request after a write costs (a count, a walk from an end);
 *   - under writes: with autocannon over loopback (BENCH_CONNECTIONS=10), in interleaved rounds
 *     (Tollgate, baseline, Tollgate, baseline…), while a background writer creates customers through
 *     Tollgate's API into the listed app at each rate of BENCH_WRITES (writes per second, default
 *     0,1,10,100; open loop: one POST every 1/rate s whatever the answers, at most 200 outstanding),
 *     with e-mails of the seed's shares, so writes add matches to every filter. The writer runs in both
 *     sides' rounds (the database sees the same writes); its latencies are reported per rate. At rate 0
 *     Tollgate answers from what it remembered; at the others, from what it remembered and adjusted by
 *     the writes' notices.
 * Tollgate is the built code from dist/ (`npm run build` first), the whole middleware chain; the
 * baseline is a minimal node:http server running the uncached SQL through `pg` (a count and a page on
 * every request, the deep page from the nearer end), what every request cost before Tollgate remembered
 * anything. It prints the cold times, and per rate and request the median p50 over the
 * rounds, the spread (min–max of the rounds' p50), p99 and throughput of both sides and the ratio
 * baseline / Tollgate, with the load average (os.loadavg) at each rate's start and end. Then POST
 * throughput (BENCH_CREATES=0 skips it): Tollgate with the list's insert triggers all enabled, without
 * the rows notice, and without the count and the notice, interleaved (the write path's cost of each).
 * The database is dropped at the end, whatever happens.
 *
 *   node bench/customers-list.js    # BENCH_CUSTOMERS=1000000 BENCH_DURATION=5 BENCH_ROUNDS=2
 *                                   # BENCH_CONNECTIONS=10 BENCH_WRITES=0,1,10,100 BENCH_CREATES=1
 *                                   # BENCH_LOG_LEVEL=info BENCH_PROFILE_DIR=… BENCH_SHOW_LOG=1
 *                                   # BENCH_ONLY=acme,no filter (requests whose names start so)
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg as osLoadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import autocannon from 'autocannon';
import pg from 'pg';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 1_000_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const WRITE_RATES = (process.env.BENCH_WRITES ?? '0,1,10,100').split(',').filter(Boolean).map(Number);
const CREATES = process.env.BENCH_CREATES !== '0';
/** BENCH_ONLY=acme,no filter: only the requests whose names start with one of these. */
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
/** The writer's cap on POSTs awaiting an answer: an overloaded server slows the rate instead of piling up. */
const MAX_OUTSTANDING_WRITES = 200;
const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;

/** The requests measured; `plan` is what EXPLAIN must show for the count and the page at this size. */
const ALL_SCENARIOS = [
  {
    name: 'no filter',
    query: {},
    plans: ['customer_count', 'Index Only Scan Backward using customer_app_id_created_at_id_index'],
  },
  {
    name: 'selective (11)',
    query: { email: 'r99999' },
    plans: ['customer_app_id_email_lower_trgm_index', 'customer_app_id_email_lower_trgm_index'],
  },
  { name: 'acme (1 %)', query: { email: 'acme' }, plans: ['customer_app_id_email_lower_trgm_index', null] },
  { name: 'example (10 %)', query: { email: 'example' }, plans: [null, null] },
  {
    name: 'gmail (89 %)',
    query: { email: 'gmail' },
    plans: [
      'Index Only Scan using customer_app_id_',
      'Index Only Scan Backward using customer_app_id_created_at_id_index',
    ],
  },
  {
    name: 'offset = n/2',
    query: { offset: Math.floor(CUSTOMERS / 2) },
    plans: ['customer_count', 'Index Only Scan using customer_app_id_created_at_id_index'],
  },
  {
    name: 'offset = n − 20',
    query: { offset: CUSTOMERS - 20 },
    plans: ['customer_count', 'Index Only Scan using customer_app_id_created_at_id_index'],
  },
];
const SCENARIOS = ALL_SCENARIOS.filter((s) => !ONLY || ONLY.some((prefix) => s.name.startsWith(prefix)));

async function main() {
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const name = `tollgate_bench_list_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  try {
    const apps = await seed(url);
    await assertPlans(url, apps[0].appId);
    console.log(`load before: ${loadavg()}`);
    console.log(
      `autocannon: ${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} rounds interleaved, loopback\n`,
    );
    const tollgate = await startChild('tollgate', url);
    const baseline = await startChild('baseline', url);
    const results = [];
    try {
      await once(tollgate.url, {}, apps[0].apiKey); // the process's own first request (connections, JIT)
      await once(baseline.url, {}, apps[0].apiKey);
      const colds = [];
      for (const [i, scenario] of SCENARIOS.entries()) {
        colds.push(await coldRequests(url, apps[0].appId, i, scenario, tollgate, baseline, apps[0].apiKey));
        for (const app of apps) {
          await run(tollgate.url, scenario.query, app.apiKey, 1); // warm both (caches, buffers)
          await run(baseline.url, scenario.query, app.apiKey, 1);
        }
        await sameAnswers(scenario, tollgate, baseline, apps[0].apiKey);
      }
      printCold(colds);
      for (const rate of WRITE_RATES) {
        const loadBefore = loadLine();
        const rows = [];
        for (const scenario of SCENARIOS) {
          const runs = { tollgate: [], baseline: [], writesT: [], writesB: [] };
          for (let round = 0; round < ROUNDS; round++) {
            const app = apps[round % apps.length];
            for (const side of ['tollgate', 'baseline']) {
              // The writer always goes through Tollgate's API: both sides read while the same writes happen.
              const writer = startWriter(tollgate.url, app.apiKey, rate);
              const target = side === 'tollgate' ? tollgate.url : baseline.url;
              runs[side].push(await run(target, scenario.query, app.apiKey, DURATION));
              (side === 'tollgate' ? runs.writesT : runs.writesB).push(await writer.stop());
            }
          }
          rows.push({ scenario, runs });
        }
        results.push({ rate, rows });
        printRate(rate, rows, loadBefore, loadLine());
      }
    } finally {
      await stopChild(tollgate);
      await stopChild(baseline);
    }
    console.log(`load after lists: ${loadavg()}\n`);
    if (CREATES) {
      await measureCreates(url, apps[1]);
      console.log(`load after creates: ${loadavg()}`);
    }
    const failed = results
      .flatMap(({ rows }) => rows.flatMap(({ runs }) => [...runs.tollgate, ...runs.baseline]))
      .some((r) => r.bad > 0);
    if (failed) {
      console.log('some responses were not 200');
      process.exitCode = 1;
    }
  } finally {
    await dropDatabase(SERVER_URL, name);
  }
}

/** Migrates, then writes two apps, an API key each, and the customers with one INSERT … SELECT per app. */
async function seed(url) {
  const { connect, migrate } = await import(dist('db.js'));
  const { hashSecret, randomSecret, displayPrefix, API_KEY_PREFIX } = await import(dist('core/tokens.js'));
  const orm = await connect(url);
  try {
    await migrate(orm);
  } finally {
    await orm.close(true);
  }
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const started = performance.now();
    // Building the two large indexes once after loading is several times faster than maintaining them
    // row by row; their definitions are read back from the migrated schema, not repeated here.
    const { rows: indexes } = await db.query(
      `select indexname, indexdef from pg_indexes
        where tablename = 'customer' and indexname in ('customer_app_id_created_at_id_index', 'customer_app_id_email_lower_trgm_index')`,
    );
    for (const { indexname } of indexes) await db.query(`drop index ${indexname}`);
    const apps = [];
    for (const tag of ['a', 'b']) {
      const appId = `app_bench${tag}${randomBytes(8).toString('hex')}`;
      const apiKey = randomSecret(API_KEY_PREFIX);
      await db.query(`insert into app (id, name) values ($1, $2)`, [appId, `bench ${tag}`]);
      await db.query(`insert into api_key (id, app_id, key_hash, prefix) values ($1, $2, $3, $4)`, [
        `key_bench${tag}${randomBytes(8).toString('hex')}`,
        appId,
        hashSecret(apiKey),
        displayPrefix(apiKey),
      ]);
      await db.query(
        `insert into customer (id, app_id, email, email_lower, metadata, created_at, updated_at)
         select 'cus_' || md5($1 || n), $1, e, e, '{}', ts, ts
           from generate_series(1, $2::int) as n,
                lateral (select 'user' || n || '@' || case when n % 100 = 0 then 'acme.io'
                                                           when n % 10 = 5 then 'example.org'
                                                           else 'gmail.com' end as e,
                                timestamptz '2024-01-01' + n * interval '10 seconds' as ts) as x`,
        [appId, CUSTOMERS],
      );
      apps.push({ appId, apiKey });
    }
    for (const { indexdef } of indexes) await db.query(indexdef);
    await db.query('vacuum analyze customer');
    const { rows } = await db.query('select app_id, sum(n)::int as n from customer_count group by app_id');
    for (const { appId } of apps) {
      if (rows.find((r) => r.app_id === appId)?.n !== CUSTOMERS)
        throw new Error('the count is not exact after the seed');
    }
    console.log(
      `seeded 2 apps × ${CUSTOMERS} customers in ${((performance.now() - started) / 1000).toFixed(0)} s (indexes built after loading, vacuum analyze)`,
    );
    return apps;
  } finally {
    await db.end();
  }
}

/**
 * The list's SQL, shared by the baseline and the EXPLAIN checks; mirrors CustomersService.listCustomers:
 * one statement giving the total and the page (ids found index-only, then their rows), counted from
 * `direction`'s end and returned newest first.
 */
const COUNT_SQL = '(select coalesce(sum(n), 0) from customer_count where app_id = $1)';
const NEAR_OFFSET = 10_000;

function pageSql(pattern, limit, offset, direction) {
  const order = direction === 'newest' ? 'desc' : 'asc';
  const filter = pattern === null ? '' : ' and email_lower like $2';
  const total = pattern === null ? COUNT_SQL : `(select count(*) from customer where app_id = $1${filter})`;
  const n = pattern === null ? 2 : 3;
  return {
    sql: `select t.total, c.id, c.email, c.name, c.metadata, c.payment_customer_id, c.created_at, c.updated_at
            from (select ${total} as total) as t
            left join (select id, created_at from customer where app_id = $1${filter}
                        order by created_at ${order}, id ${order} limit $${n} offset $${n + 1}) as p on true
            left join customer as c on c.id = p.id
           order by p.created_at desc, p.id desc`,
    params: pattern === null ? [limit, offset] : [pattern, limit, offset],
  };
}

/** The statement for a page counted from the nearer end, given the app's total. */
function nearerEndSql(total, limit, offset) {
  return offset * 2 < total
    ? pageSql(null, limit, offset, 'newest')
    : pageSql(null, Math.min(limit, total - offset), Math.max(total - offset - limit, 0), 'oldest');
}

const PLANNER = `select set_config('enable_seqscan', 'off', true), set_config('random_page_cost', '1.1', true), set_config('jit', 'off', true)`;

function likeFragment(text) {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Fails the run when a list query does not use its index at this size (small tables plan differently). */
async function assertPlans(url, appId) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    for (const { name, query, plans } of SCENARIOS) {
      const pattern = query.email ? likeFragment(query.email) : null;
      const offset = query.offset ?? 0;
      await db.query('begin');
      if (pattern) await db.query(PLANNER);
      const { sql, params } =
        pattern === null && offset > NEAR_OFFSET
          ? nearerEndSql(CUSTOMERS, 20, offset)
          : pageSql(pattern, 20, offset, 'newest');
      const plan = (await db.query(`explain ${sql}`, [appId, ...params])).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      await db.query('commit');
      for (const [what, expected] of [
        ['count', plans[0]],
        // An offset up to NEAR_OFFSET (a small BENCH_CUSTOMERS) is walked from the newest end.
        ['page', offset <= NEAR_OFFSET ? plans[1]?.replace('Scan using', 'Scan Backward using') : plans[1]],
      ]) {
        if (/Seq Scan on customer\b/.test(plan))
          throw new Error(`${name}: the ${what} reads the whole table:\n${plan}`);
        if (expected && !plan.includes(expected)) {
          throw new Error(`${name}: the ${what} does not use ${expected}:\n${plan}`);
        }
      }
      console.log(`plan ok  ${name.padEnd(16)} ${summary(plan)}`);
    }
  } finally {
    await db.end();
  }
}

function summary(plan) {
  const scans = plan.match(
    /(Parallel )?(Index Only Scan( Backward)?|Bitmap Index Scan|Index Scan( Backward)?|Seq Scan) (using|on) \S+/g,
  );
  return [...new Set(scans ?? [])].join(', ');
}

/**
 * Both servers must answer the same first page and total. Asked until both answer 200 (at most 20 s):
 * requests of the previous run may still hold the database, and Tollgate answers 503 past its
 * statement timeout (2 s) where the baseline just waits.
 */
async function sameAnswers(scenario, tollgate, baseline, apiKey) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answers = [];
    for (const target of [tollgate.url, baseline.url]) {
      const res = await fetch(
        `${target}/v1/customers?${new URLSearchParams({ limit: '20', ...scenario.query })}`,
        {
          headers: { authorization: `Bearer ${apiKey}` },
        },
      );
      const body = await res.json().catch(() => ({}));
      answers.push(
        JSON.stringify({
          status: res.status,
          ids: body.data?.map((c) => c.id),
          total: body.pagination?.total,
        }),
      );
    }
    if (answers[0] === answers[1]) return;
    if (
      Date.now() > deadline ||
      !answers.every((a) => a.includes('"status":200') || a.includes('"status":503'))
    ) {
      throw new Error(`${scenario.name}: Tollgate and the baseline differ:\n${answers.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** One request, alone; its time in ms. */
async function once(target, query, apiKey) {
  const started = performance.now();
  const res = await fetch(`${target}/v1/customers?${new URLSearchParams({ limit: '20', ...query })}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${res.status} from ${target}`);
  return performance.now() - started;
}

/**
 * The first request after a write: a customer matching none of the fragments is inserted (new version),
 * then one request to each server, alone, with the load at that moment.
 */
async function coldRequests(url, appId, i, scenario, tollgate, baseline, apiKey) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(`insert into customer (id, app_id, email, email_lower) values ($1, $2, $3, $3)`, [
      `cus_cold_${i}_${randomBytes(6).toString('hex')}`,
      appId,
      `cold${i}@bench.invalid`,
    ]);
  } finally {
    await db.end();
  }
  const load = loadavg().split(' ')[0];
  const tollgateMs = await once(tollgate.url, scenario.query, apiKey);
  const baselineMs = await once(baseline.url, scenario.query, apiKey);
  return { tollgate: tollgateMs, baseline: baselineMs, load };
}

async function run(target, query, apiKey, duration) {
  const result = await autocannon({
    url: `${target}/v1/customers?${new URLSearchParams({ limit: '20', ...query })}`,
    connections: CONNECTIONS,
    duration,
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: result.requests.average,
    bad: result.non2xx + result.errors + result.timeouts,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const spread = (xs) => `${Math.min(...xs)}–${Math.max(...xs)}`;

function printCold(colds) {
  console.log('cold: one request alone after an insert, Tollgate / baseline (1-minute load)');
  for (const [i, cold] of colds.entries()) {
    console.log(
      `  ${SCENARIOS[i].name.padEnd(18)}${cold.tollgate.toFixed(0)} / ${cold.baseline.toFixed(0)} ms (${cold.load})`,
    );
  }
  console.log('');
}

/**
 * A background writer: one POST /v1/customers every 1/rate s (open loop, at most
 * MAX_OUTSTANDING_WRITES awaiting an answer; a tick past that is counted as skipped), e-mails in the
 * seed's shares. `stop()` waits for the writes under way and gives their latencies.
 */
let written = 0;
function startWriter(target, apiKey, rate) {
  const latencies = [];
  let failed = 0;
  let skipped = 0;
  const pending = new Set();
  const post = () => {
    if (pending.size >= MAX_OUTSTANDING_WRITES) {
      skipped++;
      return;
    }
    const n = ++written;
    const domain = n % 100 === 0 ? 'acme.io' : n % 10 === 5 ? 'example.org' : 'gmail.com';
    const started = performance.now();
    const request = fetch(`${target}/v1/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `w${process.pid}-${n}@${domain}` }),
    })
      .then(async (res) => {
        await res.arrayBuffer();
        if (res.status === 201) latencies.push(performance.now() - started);
        else failed++;
      })
      .catch(() => {
        failed++;
      })
      .finally(() => pending.delete(request));
    pending.add(request);
  };
  const timer = rate > 0 ? setInterval(post, 1000 / rate) : undefined;
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      return { latencies, failed, skipped };
    },
  };
}

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

function printRate(rate, rows, loadBefore, loadAfter) {
  console.log(`writes/s ${rate}: load ${loadBefore} at start, ${loadAfter} at end`);
  console.log(
    `${'request'.padEnd(18)}${'Tollgate p50'.padStart(13)}${'(spread)'.padStart(12)}${'p99'.padStart(8)}${'req/s'.padStart(7)}` +
      `${'raw p50'.padStart(10)}${'(spread)'.padStart(14)}${'p99'.padStart(8)}${'req/s'.padStart(7)}${'raw/T'.padStart(7)}` +
      `${'writer p50/p99, T rounds'.padStart(26)}${'raw rounds'.padStart(18)}${'writes'.padStart(8)}${'not 2xx T/B/W'.padStart(15)}`,
  );
  const writer = (ws) => {
    const all = ws.flatMap((w) => w.latencies);
    return all.length === 0
      ? '–'
      : `${percentile(all, 50).toFixed(0)} / ${percentile(all, 99).toFixed(0)} ms`;
  };
  for (const { scenario, runs } of rows) {
    const t = runs.tollgate;
    const b = runs.baseline;
    const tp50 = median(t.map((r) => r.p50));
    const bp50 = median(b.map((r) => r.p50));
    const writes = [...runs.writesT, ...runs.writesB];
    const bad = [
      t.reduce((n, r) => n + r.bad, 0),
      b.reduce((n, r) => n + r.bad, 0),
      writes.reduce((n, w) => n + w.failed + w.skipped, 0),
    ];
    const cells = [
      `${tp50} ms`.padStart(13),
      spread(t.map((r) => r.p50)).padStart(12),
      String(median(t.map((r) => r.p99))).padStart(8),
      median(t.map((r) => r.rps))
        .toFixed(0)
        .padStart(7),
      `${bp50} ms`.padStart(10),
      spread(b.map((r) => r.p50)).padStart(14),
      String(median(b.map((r) => r.p99))).padStart(8),
      median(b.map((r) => r.rps))
        .toFixed(0)
        .padStart(7),
      (bp50 / Math.max(tp50, 0.5)).toFixed(2).padStart(7),
      writer(runs.writesT).padStart(26),
      writer(runs.writesB).padStart(18),
      String(writes.reduce((n, w) => n + w.latencies.length, 0)).padStart(8),
      bad.join('/').padStart(15),
    ];
    console.log(scenario.name.padEnd(18) + cells.join(''));
  }
  console.log('');
}

/** POST /v1/customers into a large app, with the list's insert triggers on and off, interleaved. */
async function measureCreates(url, app) {
  const tollgate = await startChild('tollgate', url);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  let next = 0;
  const post = () =>
    autocannon({
      url: `${tollgate.url}/v1/customers`,
      method: 'POST',
      connections: CONNECTIONS,
      duration: DURATION,
      headers: { authorization: `Bearer ${app.apiKey}`, 'content-type': 'application/json' },
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({ email: `new${process.pid}-${next++}@post.example` }),
          }),
        },
      ],
    });
  // Which of the list's insert triggers run: the count (customer-count.ts) and the rows notice
  // (customer-rows-notice.ts), the order of the states rotating each round.
  const STATES = {
    all: { customer_count_insert: true, customer_list_rows_insert: true },
    'no notice': { customer_count_insert: true, customer_list_rows_insert: false },
    none: { customer_count_insert: false, customer_list_rows_insert: false },
  };
  const names = Object.keys(STATES);
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  const setTriggers = async (state) => {
    for (const [trigger, on] of Object.entries(state))
      await db.query(`alter table customer ${on ? 'enable' : 'disable'} trigger ${trigger}`);
  };
  try {
    await post(); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(round + k) % names.length];
        await setTriggers(STATES[name]);
        const r = await post();
        runs[name].push({
          rps: r.requests.average,
          p50: r.latency.p50,
          bad: r.non2xx + r.errors + r.timeouts,
        });
      }
    }
  } finally {
    await setTriggers(STATES.all);
    await db.end();
    await stopChild(tollgate);
  }
  for (const name of names) {
    const rs = runs[name];
    console.log(
      `POST /v1/customers, list triggers ${name.padEnd(9)}: ${median(rs.map((r) => r.rps)).toFixed(0)} req/s ` +
        `(spread ${spread(rs.map((r) => Math.round(r.rps)))}), p50 ${median(rs.map((r) => r.p50))} ms, ` +
        `${rs.reduce((s, r) => s + r.bad, 0)} not 201`,
    );
  }
  const rps = (name) => median(runs[name].map((r) => r.rps));
  console.log(
    `POST throughput, all / without the notice: ${(rps('all') / rps('no notice')).toFixed(2)}; ` +
      `all / without either: ${(rps('all') / rps('none')).toFixed(2)}`,
  );
}

function loadavg() {
  return readFileSync('/proc/loadavg', 'utf8').trim();
}

function loadLine() {
  return osLoadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
}

async function startChild(kind, url) {
  const child = fork(fileURLToPath(import.meta.url), [`--serve-${kind}`, url], {
    // BENCH_SHOW_LOG=1 shows Tollgate's log lines (the access log's `db` counts each request's statements).
    stdio: [
      'ignore',
      process.env.BENCH_SHOW_LOG && kind === 'tollgate' ? 'inherit' : 'ignore',
      'inherit',
      'ipc',
    ],
    // BENCH_PROFILE_DIR=dir writes a V8 CPU profile of each Tollgate process there.
    execArgv:
      process.env.BENCH_PROFILE_DIR && kind === 'tollgate'
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
        : [],
  });
  const target = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}) before listening`)));
  });
  return { child, url: target };
}

async function stopChild({ child }) {
  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
}

/** Child: Tollgate from dist/, production-like, with an API-key rate limit the bench cannot reach. */
async function serveTollgate(url) {
  const { loadConfig } = await import(dist('config.js'));
  const { startServer } = await import(dist('server.js'));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const config = loadConfig({
    DATABASE_URL: url,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    STRIPE_EMULATOR_PORT: '0',
    RATE_LIMIT_API_KEY: '1000000000',
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

/** Child: the baseline, the list's SQL with nothing around it but the API-key lookup. */
async function serveBaseline(url) {
  const { hashSecret } = await import(dist('core/tokens.js'));
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  const server = createServer(async (req, res) => {
    let client;
    try {
      client = await pool.connect();
      const u = new URL(req.url, 'http://x');
      const key = (req.headers.authorization ?? '').slice(7);
      const found = await client.query(
        'select app_id from api_key where key_hash = $1 and revoked_at is null',
        [hashSecret(key)],
      );
      if (found.rows.length === 0) {
        res.writeHead(401).end();
        return;
      }
      const appId = found.rows[0].app_id;
      const email = u.searchParams.get('email');
      const pattern = email ? likeFragment(email.toLowerCase()) : null;
      const limit = Number(u.searchParams.get('limit') ?? 20);
      const offset = Number(u.searchParams.get('offset') ?? 0);
      // The same statements as Tollgate, in the same transactions (none for a near unfiltered page).
      let statement = pageSql(pattern, limit, offset, 'newest');
      let counted = null;
      const inTransaction = pattern !== null || offset > NEAR_OFFSET;
      if (pattern) {
        await client.query('begin');
        await client.query(PLANNER);
      } else if (offset > NEAR_OFFSET) {
        await client.query('begin isolation level repeatable read read only');
        counted = Number((await client.query(`select ${COUNT_SQL} as total`, [appId])).rows[0].total);
        statement = offset >= counted ? null : nearerEndSql(counted, limit, offset);
      }
      const rows = statement ? (await client.query(statement.sql, [appId, ...statement.params])).rows : [];
      if (inTransaction) await client.query('commit');
      const total = counted ?? Number(rows[0]?.total ?? 0);
      const data = rows
        .filter((r) => r.id !== null)
        .map((r) => ({
          id: r.id,
          email: r.email,
          name: r.name,
          metadata: r.metadata,
          paymentCustomerId: r.payment_customer_id,
          createdAt: r.created_at,
          updatedAt: r.updated_at,
        }));
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ data, pagination: { total, limit, offset } }));
    } catch {
      await client?.query('rollback').catch(() => {});
      res.writeHead(500).end();
    } finally {
      client?.release();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.on('SIGTERM', () => {
    server.close();
    pool.end().finally(() => process.exit(0));
  });
  process.send(`http://127.0.0.1:${server.address().port}`);
}

// Last, so every constant above is initialised before the top-level await runs.
const mode = process.argv[2];
if (mode === '--serve-tollgate') await serveTollgate(process.argv[3]);
else if (mode === '--serve-baseline') await serveBaseline(process.argv[3]);
else await main();
