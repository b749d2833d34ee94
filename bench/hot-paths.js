/**
 * Benchmark of Tollgate's hot paths at the same concurrency, in one Tollgate process (built dist/):
 *   session       GET /v1/entitlements/check/sso                     with a session token
 *   apiKey        GET /v1/entitlements/check/sso?customerId=…        with an API key
 *   authSession   GET /v1/apps/:appId/auth/session                   with a session token
 *   graphql       POST /graphql { checkEntitlement(feature, customerId) } with an API key
 *   customer      GET /v1/customers/:id                              with an API key
 *   create        POST /v1/customers (a new e-mail each time)        with an API key, in an app of
 *                 BENCH_CREATE_APP_CUSTOMERS customers (default 1 000 000; seeding them takes a minute)
 * and, as the floor under them, a raw node:http + pg server doing the same database work with one
 * prepared statement per request (credential included): `baseline` (the session check, as in
 * bench/entitlements-check.js), `apiKeyRaw`, `customerRaw` and `createRaw` (the customer's row and its
 * outbound event, as Tollgate writes them).
 *
 * On a freshly seeded scratch database (DATABASE_URL's server, else postgres://postgres@127.0.0.1:5432/
 * postgres; dropped afterwards), autocannon over loopback, BENCH_CONNECTIONS connections (each one a
 * different customer), BENCH_ROUNDS interleaved rounds of BENCH_DURATION seconds per path after a warm-up
 * round. Prints medians with their spread and the machine's load, the ratios the targets are about, and
 * exits 1 when a target is missed or any answer was not 200:
 *   apiKey and authSession ≥ 2/3 of session's throughput; p99 < 5 ms for those three; graphql ≥ 3/4 of
 *   apiKey's (the same check over REST with the same credential); against the raw server: the checks
 *   ≥ 1.0 (they are answered from memory), `GET /v1/customers/:id` ≥ 0.6, `POST /v1/customers` ≥ 0.5.
 *
 * Each row also shows the Tollgate process's CPU time per request (user + system, from /proc), which moves
 * far less than throughput when other work shares the machine.
 *
 * BENCH_COMPARE=<dir> also starts a second Tollgate from <dir>/dist (another build of this repository,
 * e.g. a copy of dist/ made before a change, beside a package.json and a node_modules link) and measures
 * every Tollgate path on both, interleaved in the same rounds: rows of the second one end in `@B`.
 * BENCH_COMPARE_NODE_FLAGS="--flag …" runs that second Tollgate (this build, without BENCH_COMPARE) with
 * those Node/V8 flags instead of the image's (the Dockerfile's NODE_OPTIONS, which the first one runs
 * with), to measure what a flag costs; BENCH_COMPARE_NODE_FLAGS=" " runs it with none.
 *
 *   node bench/hot-paths.js   # BENCH_ROUNDS=3 BENCH_DURATION=5 BENCH_CONNECTIONS=10 BENCH_CUSTOMERS=1000
 *                             # BENCH_LOG_LEVEL=info BENCH_PROFILE_DIR=… BENCH_PATHS=apiKey,graphql
 *                             # BENCH_COMPARE=…
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import 'reflect-metadata';
import autocannon from 'autocannon';
import pg from 'pg';
import { cpuMs, imageNodeOptions } from './support.js';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 1000);
const CREATE_APP_CUSTOMERS = Number(process.env.BENCH_CREATE_APP_CUSTOMERS ?? 1_000_000);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMPARE_FLAGS = process.env.BENCH_COMPARE_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
/** Tollgate runs with the Node options the image sets (the Dockerfile's NODE_OPTIONS). */
const IMAGE_FLAGS = imageNodeOptions().split(' ').filter(Boolean);
const COMPARE = process.env.BENCH_COMPARE
  ? path.resolve(process.env.BENCH_COMPARE)
  : process.env.BENCH_COMPARE_NODE_FLAGS !== undefined
    ? ROOT
    : undefined;
const dist = (p, root = ROOT) => pathToFileURL(path.join(root, 'dist', 'src', p)).href;
const CHECK =
  'query Check($customerId: ID) { checkEntitlement(feature: "sso", customerId: $customerId) { feature allowed value } }';

const mode = process.argv[2];
if (mode === '--serve-tollgate') await serveTollgate(process.argv[3], process.argv[4]);
else if (mode === '--serve-baseline') await serveBaseline(process.argv[3]);
else await main();

async function main() {
  // Signals end the process without its 'exit' event, which is what stops the child processes.
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const name = `tollgate_bench_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  const servers = [];
  try {
    const seeded = await seed(url);
    console.log(
      `seeded ${CUSTOMERS} customers (every other one on Pro), a session each, an API key per connection; ` +
        `autocannon ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds × ${DURATION} s per path, loopback`,
    );
    console.log(`load before: ${loadavg()}\n`);
    const tollgate = await start('tollgate', url, ROOT, IMAGE_FLAGS);
    const comparedFlags = process.env.BENCH_COMPARE_NODE_FLAGS === undefined ? IMAGE_FLAGS : COMPARE_FLAGS;
    const compared = COMPARE ? await start('tollgate', url, COMPARE, comparedFlags) : undefined;
    const baseline = await start('baseline', url);
    servers.push(tollgate, baseline, ...(compared ? [compared] : []));
    const tollgatePaths = (server) => ({
      session: { server, ...sessionCheck(seeded) },
      apiKey: { server, ...apiKeyCheck(seeded) },
      authSession: { server, ...authSession(seeded) },
      graphql: { server, ...graphqlCheck(seeded) },
      customer: { server, ...customerRead(seeded) },
      create: { server, ...customerCreate(seeded, `${process.pid}-${server === tollgate ? 'a' : 'b'}`) },
    });
    // Each raw path follows the Tollgate path it is the floor of, so the pair shares the machine's mood.
    const paths = {};
    const raw = {
      session: ['baseline', sessionCheck(seeded)],
      apiKey: ['apiKeyRaw', apiKeyCheck(seeded)],
      customer: ['customerRaw', customerRead(seeded)],
      create: ['createRaw', customerCreate(seeded, `${process.pid}-raw`)],
    };
    for (const [kind, spec] of Object.entries(tollgatePaths(tollgate))) {
      paths[kind] = spec;
      if (raw[kind]) paths[raw[kind][0]] = { server: baseline, ...raw[kind][1] };
    }
    // BENCH_PATHS=apiKey,graphql measures only those (e.g. while profiling one of them).
    const only = process.env.BENCH_PATHS?.split(',');
    if (only) for (const kind of Object.keys(paths)) if (!only.includes(kind)) delete paths[kind];
    if (compared) {
      for (const [kind, spec] of Object.entries(tollgatePaths(compared)))
        if (paths[kind]) paths[`${kind}@B`] = spec;
    }
    for (const [kind, spec] of Object.entries(paths)) await verify(kind, spec);
    const results = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [kind, spec] of Object.entries(paths)) {
        const cpuBefore = spec.server.cpu();
        const result = await run(spec, round === 0 ? 2 : DURATION);
        const cpuUs = ((spec.server.cpu() - cpuBefore) * 1e3) / Math.max(1, result.requests.total);
        const bad = result.non2xx + result.errors + result.timeouts;
        if (round > 0)
          results[kind].push({
            rps: result.requests.average,
            p50: result.latency.p50,
            p99: result.latency.p99,
            cpuUs,
            bad,
          });
        console.log(
          `${round === 0 ? 'warm-up' : `round ${round}`}  ${kind.padEnd(14)}${result.requests.average.toFixed(0).padStart(7)} req/s` +
            `   p50 ${result.latency.p50} ms   p99 ${result.latency.p99} ms   CPU ${cpuUs.toFixed(0)} µs/req` +
            `   (${result.requests.total} requests, ${bad} not 200)`,
        );
      }
    }
    const rss = await tollgate.rss();
    console.log(`load after:  ${loadavg()}\nTollgate RSS after the load: ${(rss / 1024).toFixed(0)} MB\n`);
    const med = {};
    console.log(
      'path            req/s median (spread)     p50 median   p99 median (spread)   CPU µs/req median (spread)',
    );
    for (const [kind, rows] of Object.entries(results)) {
      med[kind] = { rps: median(rows.map((r) => r.rps)), p99: median(rows.map((r) => r.p99)) };
      console.log(
        `${kind.padEnd(15)} ${med[kind].rps.toFixed(0).padStart(6)} (${spread(rows.map((r) => r.rps))})`.padEnd(
          40,
        ) +
          `${median(rows.map((r) => r.p50))
            .toFixed(1)
            .padStart(6)} ms   ${med[kind].p99.toFixed(1).padStart(6)} ms (${spread(
            rows.map((r) => r.p99),
            1,
          )})`.padEnd(35) +
          `${median(rows.map((r) => r.cpuUs))
            .toFixed(0)
            .padStart(6)} (${spread(rows.map((r) => r.cpuUs))})`,
      );
    }
    const ratio = (a, b) => (med[a] && med[b] ? med[a].rps / med[b].rps : Number.NaN);
    const ratios = {
      'apiKey / session': [ratio('apiKey', 'session'), 2 / 3],
      'authSession / session': [ratio('authSession', 'session'), 2 / 3],
      'graphql / apiKey (REST)': [ratio('graphql', 'apiKey'), 3 / 4],
      'session / baseline (raw)': [ratio('session', 'baseline'), 1],
      'apiKey / apiKeyRaw': [ratio('apiKey', 'apiKeyRaw'), 1],
      'customer / customerRaw': [ratio('customer', 'customerRaw'), 0.6],
      'create / createRaw': [ratio('create', 'createRaw'), 0.5],
    };
    const comparison = compared
      ? Object.fromEntries(
          Object.keys(results)
            .filter((kind) => kind.endsWith('@B'))
            .map((b) => [`${b.slice(0, -2)} / ${b}`, [ratio(b.slice(0, -2), b), 0]]),
        )
      : {};
    Object.assign(ratios, comparison);
    let met = true;
    console.log('');
    for (const [what, [value, target]] of Object.entries(ratios)) {
      console.log(
        `${what.padEnd(30)} ${value.toFixed(2)}${target ? `   (target ≥ ${target.toFixed(2)})` : ''}`,
      );
      if (!(value >= target)) met = false;
    }
    if (only || compared) met = false;
    for (const kind of ['session', 'apiKey', 'authSession'])
      if (!med[kind] || med[kind].p99 >= 5) met = false;
    if (Object.values(results).some((rows) => rows.some((r) => r.bad > 0))) met = false;
    console.log(
      `\ntargets (ratios above, p99 < 5 ms for session/apiKey/authSession, all 200): ${met ? 'met' : 'NOT met'}`,
    );
    process.exitCode = met ? 0 : 1;
  } finally {
    for (const server of servers) await server.stop();
    await dropDatabase(SERVER_URL, name);
  }
}

/** Migrates, then one app, a free (default) and a pro plan, customers with sessions, and an API key. */
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
      `insert into plan (id, app_id, slug, name, is_default, stripe_price_id, features) values
         ('pln_free', 'app_bench', 'free', 'Free', true, null, '{"sso": false, "projects": 1}'),
         ('pln_pro', 'app_bench', 'pro', 'Pro', false, 'price_pro', '{"sso": true, "projects": 100}')`,
    );
    await client.query(
      `insert into customer (id, app_id, email, email_lower, name, metadata)
         select 'cus_bench_' || i, 'app_bench', 'bench-' || i || '@example.com', 'bench-' || i || '@example.com',
                'Customer ' || i, '{"tier": "gold"}'
           from generate_series(0, $1 - 1) i`,
      [CUSTOMERS],
    );
    await client.query(
      `insert into subscription (id, app_id, customer_id, plan_id, stripe_subscription_id, stripe_customer_id, status)
         select 'sub_bench_' || i, 'app_bench', 'cus_bench_' || i, 'pln_pro', 'sub_s_' || i, 'cus_s_' || i, 'active'
           from generate_series(0, $1 - 1, 2) i`,
      [CUSTOMERS],
    );
    const tokens = Array.from({ length: CUSTOMERS }, () => randomSecret(SESSION_TOKEN_PREFIX));
    await client.query(
      `insert into session (id, app_id, customer_id, token_hash, expires_at)
         select 'ses_bench_' || i, 'app_bench', 'cus_bench_' || i, h, now() + interval '1 day'
           from unnest($1::text[]) with ordinality as t(h, i0), lateral (select i0 - 1 as i) x`,
      [tokens.map((t) => hashSecret(t))],
    );
    // One key per connection, as separate API clients would have: GraphQL gives each credential only a
    // few concurrent requests (GRAPHQL_MAX_CONCURRENT_PER_CREDENTIAL), which one shared key would measure.
    const apiKeys = Array.from({ length: CONNECTIONS }, () => randomSecret(API_KEY_PREFIX));
    for (const [i, apiKey] of apiKeys.entries()) {
      await client.query(
        `insert into api_key (id, app_id, key_hash, prefix) values ($1, 'app_bench', $2, $3)`,
        [`key_bench_${i}`, hashSecret(apiKey), apiKey.slice(0, 12)],
      );
    }
    // The app customers are created in: CREATE_APP_CUSTOMERS of them already, as in a grown app.
    await client.query(`insert into app (id, name) values ('app_create', 'create')`);
    await client.query(
      `insert into customer (id, app_id, email, email_lower, name, metadata, created_at, updated_at)
         select 'cus_grown_' || i, 'app_create', 'grown-' || i || '@example.com', 'grown-' || i || '@example.com',
                null, '{}', now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval
           from generate_series(1, $1) i`,
      [CREATE_APP_CUSTOMERS],
    );
    await client.query('analyze customer');
    const createKeys = Array.from({ length: CONNECTIONS }, () => randomSecret(API_KEY_PREFIX));
    for (const [i, apiKey] of createKeys.entries()) {
      await client.query(
        `insert into api_key (id, app_id, key_hash, prefix) values ($1, 'app_create', $2, $3)`,
        [`key_create_${i}`, hashSecret(apiKey), apiKey.slice(0, 12)],
      );
    }
    return {
      appId: 'app_bench',
      tokens,
      apiKeys,
      createKeys,
      customers: tokens.map((_, i) => `cus_bench_${i}`),
    };
  } finally {
    await client.end();
  }
}

function sessionCheck({ tokens }) {
  return {
    path: '/v1/entitlements/check/sso',
    perClient: (i) => ({
      path: '/v1/entitlements/check/sso',
      headers: { authorization: `Bearer ${tokens[i]}` },
    }),
  };
}

function apiKeyCheck({ apiKeys, customers }) {
  return {
    perClient: (i) => ({
      path: `/v1/entitlements/check/sso?customerId=${customers[i]}`,
      headers: { authorization: `Bearer ${apiKeys[i % apiKeys.length]}` },
    }),
  };
}

function authSession({ appId, tokens }) {
  return {
    perClient: (i) => ({
      path: `/v1/apps/${appId}/auth/session`,
      headers: { authorization: `Bearer ${tokens[i]}` },
    }),
  };
}

function graphqlCheck({ apiKeys, customers }) {
  return {
    perClient: (i) => ({
      path: '/graphql',
      method: 'POST',
      headers: { authorization: `Bearer ${apiKeys[i % apiKeys.length]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: CHECK, variables: { customerId: customers[i] } }),
    }),
  };
}

function customerRead({ apiKeys, customers }) {
  return {
    perClient: (i) => ({
      path: `/v1/customers/${customers[i]}`,
      headers: { authorization: `Bearer ${apiKeys[i % apiKeys.length]}` },
    }),
  };
}

/** A new e-mail at every request: `tag` keeps each server's addresses apart. */
function customerCreate({ createKeys }, tag) {
  let n = 0;
  return {
    perClient: (i) => ({
      path: '/v1/customers',
      method: 'POST',
      headers: {
        authorization: `Bearer ${createKeys[i % createKeys.length]}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ email: `new-${tag}-${n++}@example.com`, name: 'New' }),
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ email: `new-${tag}-${n++}@example.com`, name: 'New' }),
      }),
    }),
  };
}

/** Each path must answer a sample of its requests with 200 and the expected value before it is measured. */
async function verify(row, spec) {
  const kind = row.replace(/@B$/, '');
  for (let i = 0; i < 4; i++) {
    const { path: p, method, headers, body } = spec.perClient(i);
    const res = await fetch(`${spec.server.target}${p}`, { method: method ?? 'GET', headers, body });
    const json = await res.json();
    if (kind.startsWith('customer')) {
      if (res.status !== 200 || json.id !== `cus_bench_${i}` || json.email !== `bench-${i}@example.com`)
        throw new Error(`${row} answered ${res.status} ${JSON.stringify(json)} for customer ${i}`);
      continue;
    }
    if (kind.startsWith('create')) {
      if (res.status !== 201 || !json.id?.startsWith('cus_') || json.name !== 'New')
        throw new Error(`${row} answered ${res.status} ${JSON.stringify(json)}`);
      continue;
    }
    const value =
      kind === 'graphql'
        ? json.data?.checkEntitlement?.value
        : kind === 'authSession'
          ? json.entitlements?.features?.sso
          : json.value;
    if (res.status !== 200 || value !== (i % 2 === 0)) {
      throw new Error(`${row} answered ${res.status} ${JSON.stringify(json)} for customer ${i}`);
    }
  }
}

/** One autocannon run; connection i is customer i's (its session, or the API key asking about it). */
function run(spec, duration) {
  let next = 0;
  const first = spec.perClient(0);
  return autocannon({
    url: `${spec.server.target}${first.path}`,
    method: first.method ?? 'GET',
    connections: CONNECTIONS,
    duration,
    setupClient: (client) => {
      const { path: p, method, headers, body, setupRequest } = spec.perClient(next++ % CONNECTIONS);
      client.setRequests([
        { path: p, method: method ?? 'GET', headers, body, ...(setupRequest && { setupRequest }) },
      ]);
    },
  });
}

/**
 * Starts one server in a child process (Tollgate from `root`'s dist/, with Node `flags`); `rss` reads its resident memory
 * (kB), `cpu` the CPU time it has used (ms), `stop` ends it.
 */
async function start(kind, url, root = ROOT, flags = []) {
  const child = fork(fileURLToPath(import.meta.url), [`--serve-${kind}`, url, root], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: [
      ...flags,
      ...(process.env.BENCH_PROFILE_DIR && kind === 'tollgate'
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
        : []),
    ],
  });
  // A bench stopped early (Ctrl-C, a closed pipe) must not leave its servers running.
  const orphan = () => child.kill('SIGKILL');
  process.once('exit', orphan);
  const target = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}) before listening`)));
  });
  return {
    target,
    rss: async () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]),
    cpu: () => cpuMs(child.pid),
    stop: async () => {
      process.removeListener('exit', orphan);
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
}

/** Child: Tollgate from `root`'s dist/, with limits the bench cannot reach. */
async function serveTollgate(url, root) {
  const { loadConfig } = await import(dist('config.js', root));
  const { startServer } = await import(dist('server.js', root));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const config = loadConfig({
    DATABASE_URL: url,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    STRIPE_EMULATOR_PORT: '0',
    RATE_LIMIT_SESSION: '1000000000',
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

/**
 * Child: the raw server, one prepared statement per request with the credential checked in it: the
 * session check (as in bench/entitlements-check.js), the same check with an API key, a customer read and
 * a customer create (the row and its outbound event, which finds no endpoint, in one statement).
 */
async function serveBaseline(url) {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  const planOf = (app, customer) => `
    select p.features -> $2 as value from plan p where p.id = coalesce(
      (select sub.plan_id from subscription sub
        where sub.app_id = ${app} and sub.customer_id = ${customer} and sub.organization_id is null
          and sub.status in ('trialing', 'active', 'past_due')
        order by sub.created_at desc, sub.id desc limit 1),
      (select d.id from plan d where d.app_id = ${app} and d.is_default limit 1))`;
  const statements = {
    session: `
      select x.value from session s left join lateral (${planOf('s.app_id', 's.customer_id')}) x on true
       where s.token_hash = $1 and s.revoked_at is null and s.expires_at > now() and s.organization_id is null`,
    apiKey: `
      select x.value from api_key k left join lateral (${planOf('k.app_id', '$3')}) x on true
       where k.key_hash = $1 and k.revoked_at is null`,
    customer: `
      select c.id, c.email, c.name, c.metadata, c.payment_customer_id, c.created_at, c.updated_at
        from api_key k left join customer c on c.app_id = k.app_id and c.id = $2
       where k.key_hash = $1 and k.revoked_at is null`,
    create: `
      with k as (select app_id from api_key where key_hash = $1 and revoked_at is null),
      c as (
        insert into customer (id, app_id, email, email_lower, name, metadata, created_at, updated_at)
        select $2, k.app_id, $3, lower($3), $4, '{}', now(), now() from k
        returning id, app_id, email, name, metadata, payment_customer_id, created_at, updated_at),
      t as (select p.id from webhook_endpoint p, c where p.app_id = c.app_id and p.enabled),
      e as (
        insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
        select 'msg_' || $2, c.app_id, 'customer.created', to_jsonb(c), jsonb_build_array(c.id), now()
          from c where exists (select 1 from t)
        returning id)
      select c.* from c`,
  };
  const present = (c) => ({
    id: c.id,
    email: c.email,
    name: c.name,
    metadata: c.metadata,
    paymentCustomerId: c.payment_customer_id,
    createdAt: c.created_at.toISOString(),
    updatedAt: c.updated_at.toISOString(),
  });
  const json = (res, status, body) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const query = async (name, values) => (await pool.query({ name, text: statements[name], values })).rows;
  const check = (rows, res, feature) => {
    if (rows.length === 0) return json(res, 401, { statusCode: 401 });
    const value = rows[0].value ?? null;
    const allowed =
      value === true ||
      (typeof value === 'number' && value > 0) ||
      (typeof value === 'string' && value !== '');
    json(res, 200, { feature, allowed, value });
  };
  const server = createServer(async (req, res) => {
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ')) return res.writeHead(401).end();
    const hash = createHash('sha256').update(auth.slice(7)).digest('hex');
    const url = new URL(req.url, 'http://raw');
    try {
      if (url.pathname.startsWith('/v1/entitlements/check/')) {
        const feature = decodeURIComponent(url.pathname.slice('/v1/entitlements/check/'.length));
        const customerId = url.searchParams.get('customerId');
        if (customerId === null) check(await query('session', [hash, feature]), res, feature);
        else check(await query('apiKey', [hash, feature, customerId]), res, feature);
      } else if (req.method === 'GET' && url.pathname.startsWith('/v1/customers/')) {
        const rows = await query('customer', [hash, url.pathname.slice('/v1/customers/'.length)]);
        if (rows.length === 0) json(res, 401, { statusCode: 401 });
        else if (rows[0].id === null) json(res, 404, { statusCode: 404 });
        else json(res, 200, present(rows[0]));
      } else if (req.method === 'POST' && url.pathname === '/v1/customers') {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const id = `cus_${randomBytes(16).toString('hex')}`;
        const rows = await query('create', [hash, id, body.email, body.name ?? null]);
        if (rows.length === 0) json(res, 401, { statusCode: 401 });
        else json(res, 201, present(rows[0]));
      } else {
        res.writeHead(404).end();
      }
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

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function spread(values, digits = 0) {
  return `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
}

function loadavg() {
  return readFileSync('/proc/loadavg', 'utf8').trim();
}
