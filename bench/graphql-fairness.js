/**
 * Fairness between tenants: one app's API key sends expensive-but-allowed GraphQL documents on many
 * connections; another app's REST latency must stay within 3x of what it is when the first app is idle.
 *
 * Starts Tollgate from dist/ (`npm run build` first) against a scratch database it creates and drops,
 * with RATE_LIMIT_API_KEY raised so app A's flood is not simply cut by its request budget. Seeds apps A
 * and B with BENCH_CUSTOMERS customers each. Then, over loopback, in interleaved rounds (idle, loaded,
 * idle, loaded, …):
 *   - idle:   app B's `GET /v1/customers?limit=20` alone (autocannon, 2 connections at BENCH_B_RATE req/s);
 *   - loaded: the same, while a separate process sends app A's documents on BENCH_A_CONNECTIONS
 *             connections as fast as they are answered (each within the cost limits: 20 aliased pages of
 *             customers with their totals, or 6 pages of 100 customers filtered by e-mail).
 * Prints B's p50/p99 per round, the medians and spread of the idle and loaded p99, their ratio, what A got
 * (throughput, statuses) and the machine's load (/proc/loadavg). Exit code 1 when the loaded median p99
 * exceeds 3x the idle median p99, or B got anything but 200.
 *
 *   node bench/graphql-fairness.js   # BENCH_DURATION=8 BENCH_ROUNDS=3 BENCH_A_CONNECTIONS=20
 *                                    # BENCH_B_RATE=50 BENCH_CUSTOMERS=500 [BENCH_A_RATE=documents/s]
 */
import {
  createApp,
  dist,
  graphql,
  load,
  loadavg,
  loadInChild,
  median,
  startTollgate,
  withScratchDatabase,
} from './support.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const A_CONNECTIONS = Number(process.env.BENCH_A_CONNECTIONS ?? 20);
/** Optional: app A's documents per second (default: as fast as they are answered). */
const A_RATE = process.env.BENCH_A_RATE ? Number(process.env.BENCH_A_RATE) : undefined;
const B_RATE = Number(process.env.BENCH_B_RATE ?? 50);
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 500);
const TARGET_RATIO = 3;

const A_DOCUMENTS = [
  `{ ${Array.from(
    { length: 20 },
    (_, i) =>
      `p${i}: customers(limit: 20, offset: ${i * 20}) { data { id email name } pagination { total } }`,
  ).join(' ')} }`,
  `{ ${Array.from(
    { length: 6 },
    (_, i) =>
      `p${i}: customers(limit: 100, offset: ${i * 50}, email: "example") { data { id email name metadata createdAt } pagination { total } }`,
  ).join(' ')} }`,
];

/** Creates `CUSTOMERS` customers for each app, straight through the ORM. */
async function seed(databaseUrl, appIds) {
  const { connect, withContext } = await import(dist('db.js'));
  const { newId } = await import(dist('core/ids.js'));
  const { Customer } = await import(dist('modules/customers/customer.entity.js'));
  const orm = await connect(databaseUrl);
  try {
    await withContext(orm, async () => {
      for (const appId of appIds) {
        for (let i = 0; i < CUSTOMERS; i++) {
          const email = `fair-${i}-${appId}@example.com`;
          orm.em.create(Customer, {
            id: newId('cus'),
            app: appId,
            email,
            emailLower: email,
            name: `Customer ${i}`,
            metadata: { plan: i % 3 === 0 ? 'pro' : 'free', seat: i },
          });
        }
      }
      await orm.em.flush();
    });
  } finally {
    await orm.close(true);
  }
}

await withScratchDatabase('tollgate_bench_fairness', async (databaseUrl) => {
  const tollgate = await startTollgate(databaseUrl, { RATE_LIMIT_API_KEY: '1000000000' });
  try {
    const a = await createApp(tollgate.url, tollgate.adminToken, 'fairness-a');
    const b = await createApp(tollgate.url, tollgate.adminToken, 'fairness-b');
    await seed(databaseUrl, [a.appId, b.appId]);
    for (const query of A_DOCUMENTS) {
      const res = await graphql(tollgate.url, query, a.apiKey);
      if (res.status !== 200 || res.body.errors) {
        throw new Error(`app A's document is not allowed: ${JSON.stringify(res.body.errors)}`);
      }
    }
    console.log(
      `seeded ${CUSTOMERS} customers per app; app A: ${A_DOCUMENTS.length} documents (allowed, answered 200), ` +
        `${A_CONNECTIONS} connections; app B: GET /v1/customers?limit=20, 2 connections at ${B_RATE} req/s; ` +
        `${ROUNDS} rounds of ${DURATION} s idle + ${DURATION} s loaded`,
    );
    console.log(`load before: ${loadavg()}\n`);
    await measureB(tollgate.url, b.apiKey, 2); // warm-up

    const idle = [];
    const loaded = [];
    let bad = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const alone = await measureB(tollgate.url, b.apiKey, DURATION);
      idle.push(alone.latency.p99);
      bad += alone.non2xx + alone.errors;
      console.log(
        `round ${round} idle    B p50 ${alone.latency.p50} ms  p99 ${alone.latency.p99} ms  (${alone.requests.total} requests, ${alone.non2xx} not 2xx)  load ${loadavg()}`,
      );
      const flood = loadInChild({
        url: tollgate.url,
        connections: A_CONNECTIONS,
        ...(A_RATE ? { overallRate: A_RATE } : {}),
        duration: DURATION,
        requests: A_DOCUMENTS.map((query) => ({
          method: 'POST',
          path: '/graphql',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${a.apiKey}` },
          body: JSON.stringify({ query }),
        })),
      });
      const during = await measureB(tollgate.url, b.apiKey, DURATION);
      const aResult = await flood;
      // autocannon leaves A's queued documents behind when it stops; the next idle round starts once
      // they are done (a request of A's waits in the same line, so its answer means the line is empty).
      await graphql(tollgate.url, '{ __typename }', a.apiKey);
      loaded.push(during.latency.p99);
      bad += during.non2xx + during.errors;
      console.log(
        `round ${round} loaded  B p50 ${during.latency.p50} ms  p99 ${during.latency.p99} ms  (${during.requests.total} requests, ${during.non2xx} not 2xx)  load ${loadavg()}`,
      );
      console.log(
        `        app A: ${aResult.requests} documents (${aResult.rps.toFixed(0)}/s), p50 ${aResult.p50} ms, p99 ${aResult.p99} ms, statuses ${JSON.stringify(Object.fromEntries(Object.entries(aResult.statusCodes).map(([k, v]) => [k, v.count])))}`,
      );
    }
    const idleP99 = median(idle);
    const loadedP99 = median(loaded);
    const ratio = loadedP99 / idleP99;
    console.log(
      `\nB p99 idle: median ${idleP99} ms (spread ${Math.min(...idle)}-${Math.max(...idle)}); ` +
        `loaded: median ${loadedP99} ms (spread ${Math.min(...loaded)}-${Math.max(...loaded)}); ratio ${ratio.toFixed(2)}`,
    );
    console.log(`load after: ${loadavg()}`);
    const met = ratio <= TARGET_RATIO && bad === 0;
    console.log(
      `target (loaded p99 within ${TARGET_RATIO}x idle p99, every B answer 200): ${met ? 'met' : 'NOT met'}`,
    );
    process.exitCode = met ? 0 : 1;
  } finally {
    await tollgate.stop();
  }
});

function measureB(url, apiKey, duration) {
  return load({
    url: `${url}/v1/customers?limit=20`,
    connections: 2,
    overallRate: B_RATE,
    duration,
    headers: { authorization: `Bearer ${apiKey}` },
  });
}
