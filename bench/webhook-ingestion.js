/**
 * Benchmark of Stripe notification ingestion, `POST /v1/webhooks/stripe`, with duplicate deliveries.
 *
 * On a freshly seeded scratch database (DATABASE_URL's server, else postgres://postgres@127.0.0.1:5432/
 * postgres; dropped afterwards) it runs, each alone in a child process:
 *   1. Tollgate, the built code from dist/ (`npm run build` first), request log on at `info` as in production;
 *   2. a baseline: a minimal node:http server that checks the signature with a hand-written HMAC and applies
 *      the event with one SQL statement through `pg` (the least any receiver has to do).
 * Both get the same kind of load, in interleaved rounds: `customer.subscription.updated` events signed with
 * the real `stripe` SDK (`webhooks.generateTestHeaderString`), spread over BENCH_SUBSCRIPTIONS subscriptions
 * with strictly increasing `created` per subscription, sent by BENCH_CONNECTIONS keep-alive connections in
 * a shuffled order (so a subscription's events race each other); BENCH_DUPLICATES of the deliveries repeat
 * an earlier event, half of them right next to it (so they arrive concurrently).
 *
 * After the rounds it checks exactly-once for each side: `processed_event` holds exactly the distinct event
 * ids sent, and every subscription's state is that of its newest event. Prints events/s, p50/p99 per round,
 * medians and spread, and the machine's load; exit code 1 if a check fails, a delivery was not answered
 * 200, Tollgate's median is under BENCH_TARGET events/s, or its ratio to the baseline's is under 0.6
 * (0.5 with BENCH_OUTBOX=1, where Tollgate also writes and delivers the outbound events).
 *
 *   node bench/webhook-ingestion.js   # BENCH_ROUNDS=3 BENCH_EVENTS=3000 BENCH_CONNECTIONS=10
 *                                     # BENCH_SUBSCRIPTIONS=300 BENCH_DUPLICATES=0.3 BENCH_TARGET=1000
 *                                     # BENCH_LOG_LEVEL=info BENCH_PROFILE_DIR=…
 *   BENCH_OUTBOX=1 node bench/webhook-ingestion.js   # the same with the outbox in place: the app has a
 *                                     # webhook endpoint (a local receiver), so each applied change records
 *                                     # its outbound events in its transaction and they are delivered
 */
import { fork } from 'node:child_process';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import pg from 'pg';
import Stripe from 'stripe';
import { cpuMs } from './support.js';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 300);
const DUPLICATES = Number(process.env.BENCH_DUPLICATES ?? 0.3);
const TARGET = Number(process.env.BENCH_TARGET ?? 1000);
/** With the outbox in place: the app has a webhook endpoint (a local receiver), so every change records events. */
const OUTBOX = process.env.BENCH_OUTBOX === '1';
/** A round that takes longer than this is cut short (and fails the run). */
const ROUND_TIMEOUT_MS = 120_000;
const SECRET = `whsec_${randomBytes(24).toString('hex')}`;
const STATUSES = ['active', 'past_due', 'trialing', 'active', 'unpaid'];
const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;

const mode = process.argv[2];
if (mode === '--serve-tollgate') await serveTollgate(process.argv[3]);
else if (mode === '--serve-baseline') await serveBaseline(process.argv[3]);
else if (mode === '--serve-receiver') serveReceiver();
else await main();

async function main() {
  // Signals end the process without its 'exit' event, which is what stops the child processes.
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const name = `tollgate_bench_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  const servers = [];
  let receiver;
  try {
    if (OUTBOX) receiver = await start('receiver', url);
    await seed(url, receiver?.target);
    console.log(
      `seeded ${SUBSCRIPTIONS} subscriptions per side; ${ROUNDS} interleaved rounds of ${EVENTS} deliveries ` +
        `(${Math.round(DUPLICATES * 100)} % duplicates), ${CONNECTIONS} connections, loopback` +
        (OUTBOX ? '; outbox in place: the app has a webhook endpoint at a local receiver' : ''),
    );
    console.log(`load before: ${loadavg()}\n`);
    for (const kind of ['tollgate', 'baseline']) servers.push(await start(kind, url));
    const sent = { tollgate: [], baseline: [] };
    const results = { tollgate: [], baseline: [] };
    // A round of warm-up per side, not reported but checked like the rest.
    for (let round = 0; round <= ROUNDS; round++) {
      if (round === 1) await analyze(url);
      for (const server of servers) {
        const events = makeEvents(server.kind, round);
        sent[server.kind].push(...events.unique);
        const cpuBefore = { server: cpuMs(server.pid), database: databaseCpuMs() };
        const result = await deliver(server.target, events.deliveries);
        result.cpu = {
          server: ((cpuMs(server.pid) - cpuBefore.server) * 1000) / result.count,
          database: ((databaseCpuMs() - cpuBefore.database) * 1000) / result.count,
        };
        if (round > 0) results[server.kind].push(result);
        console.log(
          `${round === 0 ? 'warm-up' : `round ${round}`}  ${server.kind.padEnd(9)}` +
            `${result.rate.toFixed(0).padStart(6)} events/s   p50 ${result.p50.toFixed(1)} ms   ` +
            `p99 ${result.p99.toFixed(1)} ms   CPU µs/delivery: server ${result.cpu.server.toFixed(0)}, ` +
            `PostgreSQL ${result.cpu.database.toFixed(0)}   (${result.count} deliveries, ${result.failed} not 200)`,
        );
      }
    }
    console.log(`load after:  ${loadavg()}\n`);
    let outboxHeld = true;
    if (receiver) {
      const outbox = await checkOutbox(url, receiver);
      outboxHeld = outbox.held;
      console.log(`outbound events: ${outbox.summary}\n`);
    }
    let ok = true;
    for (const kind of ['tollgate', 'baseline']) {
      const failures = await checkExactlyOnce(url, kind, sent[kind]);
      const failed = results[kind].reduce((n, r) => n + r.failed, 0);
      console.log(
        `${kind.padEnd(9)} median ${median(results[kind].map((r) => r.rate)).toFixed(0)} events/s ` +
          `(${spread(
            results[kind].map((r) => r.rate),
            0,
          )})   p50 ${median(results[kind].map((r) => r.p50)).toFixed(1)} ms   ` +
          `p99 ${median(results[kind].map((r) => r.p99)).toFixed(1)} ms (${spread(
            results[kind].map((r) => r.p99),
            1,
          )})   CPU µs/delivery: server ${median(results[kind].map((r) => r.cpu.server)).toFixed(0)}, ` +
          `PostgreSQL ${median(results[kind].map((r) => r.cpu.database)).toFixed(0)}   ` +
          `exactly-once: ${failures.length === 0 ? 'held' : `BROKEN: ${failures.slice(0, 5).join('; ')}`}`,
      );
      if (failures.length > 0 || failed > 0) ok = false;
    }
    const rate = median(results.tollgate.map((r) => r.rate));
    const ratio = rate / median(results.baseline.map((r) => r.rate));
    // The baseline writes no outbound events: with an endpoint, Tollgate's share of it may be lower.
    const ratioTarget = receiver ? 0.5 : 0.6;
    console.log(`\nratio (Tollgate / baseline events/s): ${ratio.toFixed(2)} (target ≥ ${ratioTarget})`);
    // The same comparison less exposed to a shared machine's drift: each Tollgate round against the
    // baseline round that ran right after it, and the CPU both sides spent a delivery (server and
    // PostgreSQL; with an endpoint, the receiver's own CPU is in neither). Shown, not checked.
    const paired = results.tollgate.map((r, i) => r.rate / results.baseline[i].rate);
    const cpuOf = (kind) => median(results[kind].map((r) => r.cpu.server + r.cpu.database));
    console.log(
      `paired rounds: ${paired.map((r) => r.toFixed(2)).join(', ')} (median ${median(paired).toFixed(2)}); ` +
        `CPU µs/delivery, server + PostgreSQL: Tollgate ${cpuOf('tollgate').toFixed(0)}, baseline ` +
        `${cpuOf('baseline').toFixed(0)} (baseline / Tollgate ${(cpuOf('baseline') / cpuOf('tollgate')).toFixed(2)})`,
    );
    const met = ok && outboxHeld && rate >= TARGET && ratio >= ratioTarget;
    console.log(
      `target (Tollgate ≥ ${TARGET} events/s and ≥ ${ratioTarget} of the baseline, exactly-once, every delivery 200` +
        `${receiver ? ', every outbound event received once' : ''}): ${met ? 'met' : 'NOT met'}`,
    );
    process.exitCode = met ? 0 : 1;
  } finally {
    for (const server of servers) await server.stop();
    await receiver?.stop();
    await dropDatabase(SERVER_URL, name);
  }
}

/** Migrates, then one app with two priced plans and SUBSCRIPTIONS subscriptions per side, in plain SQL. */
async function seed(url, receiverUrl) {
  const { connect, migrate } = await import(dist('db.js'));
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
         ('pln_pro', 'app_bench', 'pro', 'Pro', false, 'price_pro', '{"sso": true}'),
         ('pln_max', 'app_bench', 'max', 'Max', false, 'price_max', '{"sso": true}')`,
    );
    if (receiverUrl) {
      const { loadConfig } = await import(dist('config.js'));
      const { SecretBox } = await import(dist('modules/webhooks/secret-box.js'));
      const box = new SecretBox(loadConfig({}).webhooks.secretKey);
      await client.query(
        `insert into webhook_endpoint (id, app_id, url, secret_ciphertext) values ('we_bench', 'app_bench', $1, $2)`,
        [`${receiverUrl}/hook`, box.seal(`whsec_${randomBytes(32).toString('base64')}`)],
      );
    }
    for (const kind of ['tollgate', 'baseline']) {
      await client.query(
        `insert into customer (id, app_id, email, email_lower)
           select 'cus_' || $1 || '_' || i, 'app_bench', $1 || i || '@example.com', $1 || i || '@example.com'
             from generate_series(0, $2 - 1) i`,
        [kind, SUBSCRIPTIONS],
      );
      await client.query(
        `insert into subscription (id, app_id, customer_id, plan_id, stripe_subscription_id, stripe_customer_id, status)
           select 'sub_' || $1 || '_' || i, 'app_bench', 'cus_' || $1 || '_' || i, 'pln_pro',
                  'sub_stripe_' || $1 || '_' || i, 'cus_stripe_' || $1 || '_' || i, 'active'
             from generate_series(0, $2 - 1) i`,
        [kind, SUBSCRIPTIONS],
      );
    }
  } finally {
    await client.end();
  }
}

/**
 * Gathers the tables' statistics once the warm-up round has filled them. A production database has them
 * (autovacuum analyzes a table as it grows); a server run without autovacuum has none for a new database,
 * and the planner would guess: a customer's subscriptions found through the index of every subscription
 * without an organization, say. Analyzing the freshly seeded tables instead would be worse: statistics of
 * an empty `processed_event`.
 */
async function analyze(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('analyze');
  } finally {
    await client.end();
  }
}

/**
 * One round's deliveries: unique events (event i of the round goes to subscription i mod SUBSCRIPTIONS,
 * with a `created` above every earlier one of that subscription), plus duplicates, shuffled, then signed.
 */
function makeEvents(kind, round) {
  const uniqueCount = Math.round(EVENTS * (1 - DUPLICATES));
  const base = 1_800_000_000 + round * 100_000;
  const unique = [];
  for (let i = 0; i < uniqueCount; i++) {
    const sub = i % SUBSCRIPTIONS;
    const created = base + Math.floor(i / SUBSCRIPTIONS) * 10 + 1;
    unique.push(subscriptionEvent(kind, round, i, sub, created));
  }
  const order = shuffle(unique.map((_, i) => i));
  const deliveries = order.map((i) => unique[i]);
  for (let d = 0; deliveries.length < EVENTS; d++) {
    const original = Math.floor(Math.random() * deliveries.length);
    // Half right next to the original (concurrent with it), half anywhere later.
    const at =
      d % 2 === 0 ? original + 1 : original + 1 + Math.floor(Math.random() * (deliveries.length - original));
    deliveries.splice(at, 0, deliveries[original]);
  }
  return {
    unique,
    deliveries: deliveries.map((event) => {
      event.body ??= JSON.stringify(event.json);
      return {
        body: event.body,
        signature: Stripe.webhooks.generateTestHeaderString({ payload: event.body, secret: SECRET }),
      };
    }),
  };
}

/** A `customer.subscription.updated` event shaped like Stripe's (the fields Stripe sends, not only ours). */
function subscriptionEvent(kind, round, i, sub, created) {
  const status = STATUSES[(i + round) % STATUSES.length];
  const price = (i + round) % 3 === 0 ? 'price_max' : 'price_pro';
  const periodEnd = created + 30 * 86_400;
  const id = `sub_stripe_${kind}_${sub}`;
  return {
    id: `evt_${kind}_${round}_${i}`,
    subscription: id,
    created,
    state: { status, price, cancelAtPeriodEnd: i % 2 === 1, periodEnd },
    json: {
      id: `evt_${kind}_${round}_${i}`,
      object: 'event',
      api_version: '2025-10-29.clover',
      created,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'customer.subscription.updated',
      data: {
        object: {
          id,
          object: 'subscription',
          application: null,
          automatic_tax: { enabled: false, liability: null },
          billing_cycle_anchor: created - 86_400,
          cancel_at: null,
          cancel_at_period_end: i % 2 === 1,
          canceled_at: null,
          collection_method: 'charge_automatically',
          created: created - 86_400,
          currency: 'usd',
          customer: `cus_stripe_${kind}_${sub}`,
          default_payment_method: `pm_${randomBytes(8).toString('hex')}`,
          description: null,
          discounts: [],
          ended_at: null,
          items: {
            object: 'list',
            data: [
              {
                id: `si_${randomBytes(8).toString('hex')}`,
                object: 'subscription_item',
                created: created - 86_400,
                current_period_end: periodEnd,
                current_period_start: created,
                metadata: {},
                price: {
                  id: price,
                  object: 'price',
                  active: true,
                  currency: 'usd',
                  product: 'prod_bench',
                  recurring: { interval: 'month', interval_count: 1, usage_type: 'licensed' },
                  type: 'recurring',
                  unit_amount: 1900,
                },
                quantity: 1,
                subscription: id,
              },
            ],
            has_more: false,
            total_count: 1,
            url: `/v1/subscription_items?subscription=${id}`,
          },
          latest_invoice: `in_${randomBytes(8).toString('hex')}`,
          livemode: false,
          metadata: { tollgate_app_id: 'app_bench' },
          pause_collection: null,
          start_date: created - 86_400,
          status,
          trial_end: null,
          trial_start: null,
        },
        previous_attributes: { status: 'active' },
      },
    },
  };
}

/**
 * The CPU time, in ms, of every PostgreSQL process of this machine (the server's backends and its
 * background writers): the database's share of a round is its difference. Other databases' work on the
 * server counts too; 0 where /proc is not there.
 */
function databaseCpuMs() {
  let total = 0;
  let pids = [];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuMs(pid);
    } catch {
      // ended meanwhile (a backend whose connection closed)
    }
  }
  return total;
}

/** Sends every delivery over CONNECTIONS keep-alive connections; latency per delivery, rate overall. */
async function deliver(target, deliveries) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const { hostname, port } = new URL(target);
  const latencies = [];
  let next = 0;
  let failed = 0;
  const deadline = Date.now() + ROUND_TIMEOUT_MS;
  const post = (delivery) =>
    new Promise((resolve) => {
      const req = request(
        {
          agent,
          hostname,
          port,
          method: 'POST',
          path: '/v1/webhooks/stripe',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(delivery.body),
            'stripe-signature': delivery.signature,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        },
      );
      req.on('error', () => resolve(0));
      req.end(delivery.body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < deliveries.length && Date.now() < deadline) {
        const delivery = deliveries[next++];
        const t0 = performance.now();
        const status = await post(delivery);
        latencies.push(performance.now() - t0);
        if (status !== 200) failed++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  failed += deliveries.length - latencies.length;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    count: latencies.length,
    failed,
    rate: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
  };
}

/** What exactly-once requires after every round: each id recorded once, each subscription at its newest event. */
/**
 * With the outbox: waits (up to 60 s) for every recorded delivery to settle, then checks that each
 * succeeded and that the receiver got each event exactly once (as many requests as distinct webhook-ids
 * as recorded events).
 */
async function checkOutbox(url, receiver) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + 60_000;
    let row;
    for (;;) {
      ({
        rows: [row],
      } = await client.query(
        `select (select count(*) from webhook_event)::int as events,
                (select count(*) from webhook_delivery where status = 'succeeded')::int as succeeded,
                (select count(*) from webhook_delivery where status <> 'succeeded')::int as unsettled`,
      ));
      if (row.unsettled === 0 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const got = await receiver.ask('count');
    const held =
      row.unsettled === 0 &&
      row.succeeded === row.events &&
      got.count === row.events &&
      got.distinct === row.events;
    return {
      held,
      summary:
        `${row.events} recorded, ${row.succeeded} delivered, ${row.unsettled} not (yet); the receiver got ` +
        `${got.count} requests with ${got.distinct} distinct webhook-ids: ${held ? 'each exactly once' : 'NOT each exactly once'}`,
    };
  } finally {
    await client.end();
  }
}

async function checkExactlyOnce(url, kind, sent) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const failures = [];
    const recorded = await client.query(
      'select count(*)::int as n, count(distinct id)::int as d from processed_event where id like $1',
      [`evt_${kind}_%`],
    );
    const distinct = new Set(sent.map((e) => e.id)).size;
    if (recorded.rows[0].n !== distinct || recorded.rows[0].d !== distinct) {
      failures.push(`processed_event holds ${recorded.rows[0].n} rows for ${distinct} distinct events`);
    }
    const newest = new Map();
    for (const event of sent) {
      const known = newest.get(event.subscription);
      if (!known || event.created > known.created) newest.set(event.subscription, event);
    }
    const { rows } = await client.query(
      `select s.stripe_subscription_id, s.status, s.cancel_at_period_end, s.current_period_end,
              s.provider_event_created, p.stripe_price_id
         from subscription s join plan p on p.id = s.plan_id where s.stripe_subscription_id like $1`,
      [`sub_stripe_${kind}_%`],
    );
    for (const row of rows) {
      const event = newest.get(row.stripe_subscription_id);
      if (!event) continue;
      const want = event.state;
      const got = {
        status: row.status,
        price: row.stripe_price_id,
        cancelAtPeriodEnd: row.cancel_at_period_end,
        periodEnd: row.current_period_end.getTime() / 1000,
      };
      if (
        JSON.stringify(got) !== JSON.stringify(want) ||
        Number(row.provider_event_created) !== event.created
      ) {
        failures.push(`${row.stripe_subscription_id}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
      }
    }
    return failures;
  } finally {
    await client.end();
  }
}

/** Starts one server in a child process; `stop` ends it. */
async function start(kind, url) {
  const child = fork(fileURLToPath(import.meta.url), [`--serve-${kind}`, url], {
    stdio: ['ignore', process.env.BENCH_SHOW_LOG ? 'inherit' : 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_SECRET: SECRET },
    // BENCH_PROFILE_DIR=dir writes a V8 CPU profile of the Tollgate process there.
    execArgv:
      process.env.BENCH_PROFILE_DIR && kind === 'tollgate'
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
        : [],
  });
  // A bench stopped early (Ctrl-C, a closed pipe) must not leave its servers running.
  const orphan = () => child.kill('SIGKILL');
  process.once('exit', orphan);
  const target = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code}) before listening`)));
  });
  return {
    kind,
    pid: child.pid,
    target,
    ask: (question) =>
      new Promise((resolve) => {
        child.once('message', resolve);
        child.send(question);
      }),
    stop: async () => {
      process.removeListener('exit', orphan);
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
}

/** Child: Tollgate from dist/, with Stripe reached through the SDK at a port nothing listens on. */
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
    // Events with increasing `created` never need Stripe; a call would fail (→ 500) and show up.
    STRIPE_API_BASE: `http://127.0.0.1:${await freePort()}`,
    STRIPE_WEBHOOK_SECRET: process.env.BENCH_SECRET,
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

/** Child: the app's webhook receiver (BENCH_OUTBOX), answering 200 and counting. */
function serveReceiver() {
  let count = 0;
  const ids = new Set();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      ids.add(req.headers['webhook-id']);
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1', () => {
    process.on('message', () => process.send({ count, distinct: ids.size }));
    process.send(`http://127.0.0.1:${server.address().port}`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

/** Child: the baseline, an HMAC check and one statement per delivery. */
async function serveBaseline(url) {
  const secret = process.env.BENCH_SECRET;
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  // Records the id and applies the state in one statement; a duplicate or older event changes nothing.
  const sql = `
    with recorded as (
      insert into processed_event (id, type) values ($1, $2) on conflict (id) do nothing returning id)
    update subscription s
       set status = $4, stripe_customer_id = $5, current_period_end = to_timestamp($6),
           cancel_at_period_end = $7, provider_event_created = $8, updated_at = now(),
           plan_id = coalesce((select p.id from plan p where p.app_id = s.app_id and p.stripe_price_id = $9 limit 1), s.plan_id)
     where s.stripe_subscription_id = $3 and s.provider_event_created < $8 and exists (select 1 from recorded)`;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const header = String(req.headers['stripe-signature'] ?? '');
      const t = /t=(\d+)/.exec(header)?.[1];
      const v1 = /v1=([0-9a-f]{64})/.exec(header)?.[1];
      const expected = t && createHmac('sha256', secret).update(`${t}.`).update(body).digest();
      if (!v1 || !expected || !timingSafeEqual(Buffer.from(v1, 'hex'), expected)) {
        res.writeHead(400).end();
        return;
      }
      try {
        const event = JSON.parse(body.toString('utf8'));
        const sub = event.data.object;
        const item = sub.items.data[0];
        await pool.query({
          name: 'apply',
          text: sql,
          values: [
            event.id,
            event.type,
            sub.id,
            sub.status,
            sub.customer,
            item.current_period_end,
            sub.cancel_at_period_end,
            event.created,
            item.price.id,
          ],
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
      } catch {
        res.writeHead(500).end();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.on('SIGTERM', () => {
    server.close();
    pool.end().finally(() => process.exit(0));
  });
  process.send(`http://127.0.0.1:${server.address().port}`);
}

function shuffle(items) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function spread(values, digits) {
  return `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
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
