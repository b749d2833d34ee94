/**
 * Benchmark of outbound webhooks (src/modules/webhooks/), on loopback against a scratch database:
 *
 *   1. Delivery rate: BENCH_BACKLOG events are recorded through the outbox (`OutboundEvents.record`, as the
 *      API records them) in one transaction from this process, for an app whose one endpoint is a local
 *      receiver (a child process answering 200); measured from the commit to the arrival of the last event
 *      at the receiver. Every event must arrive exactly once.
 *   2. Added latency on the request that causes an event: `POST /v1/customers` (autocannon, 10
 *      connections, BENCH_SECONDS per run) for an app with an endpoint (customer.created recorded in the
 *      transaction, then delivered while the load runs) and for an app without one, interleaved.
 *
 * Tollgate runs from dist/ (`npm run build` first) in a child process, log level warn. Prints each round,
 * medians, and /proc/loadavg. The Stripe-notification ingestion rate with the outbox in place is measured
 * by `BENCH_OUTBOX=1 node bench/webhook-ingestion.js`.
 *
 *   node bench/outbound-webhooks.js   # BENCH_ROUNDS=3 BENCH_BACKLOG=2000 BENCH_SECONDS=4
 */
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createApp, dist, load, loadavg, median, startTollgate, withScratchDatabase } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 2000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const DRAIN_TIMEOUT_MS = 60_000;
const SELF = fileURLToPath(import.meta.url);

if (process.argv[2] === '--receiver') runReceiver();
else await main();

async function main() {
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
  console.log(`load before: ${loadavg()}`);
  await withScratchDatabase('tollgate_outbound', async (databaseUrl) => {
    const receiver = await startReceiver();
    const tollgate = await startTollgate(databaseUrl, {
      LOG_LEVEL: 'warn',
      RATE_LIMIT_API_KEY: '1000000000',
    });
    const { connect, withContext } = await import(dist('db.js'));
    const { JobQueue } = await import(dist('infra/job-queue.js'));
    const { OutboundEvents } = await import(dist('modules/webhooks/outbound-events.js'));
    const { systemClock } = await import(dist('core/clock.js'));
    const orm = await connect(databaseUrl);
    const logger = { error() {}, warn() {}, info() {}, debug() {} };
    const jobs = await JobQueue.start({
      connectionString: databaseUrl,
      logger,
      schema: 'pgboss',
      superviseIntervalSeconds: 30,
      workers: false,
    });
    const outbox = new OutboundEvents(jobs, systemClock);
    try {
      const withEndpoint = await createApp(tollgate.url, tollgate.adminToken, 'bench-with-endpoint');
      const without = await createApp(tollgate.url, tollgate.adminToken, 'bench-without-endpoint');
      const created = await fetch(`${tollgate.url}/v1/webhook-endpoints`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${withEndpoint.apiKey}` },
        body: JSON.stringify({ url: `${receiver.url}/hook` }),
      });
      if (created.status !== 201) throw new Error(`endpoint: ${created.status} ${await created.text()}`);

      const rates = [];
      const latency = { with: [], without: [] };
      for (let round = 0; round <= ROUNDS; round++) {
        const label = round === 0 ? 'warm-up' : `round ${round}`;
        // 1. Delivery rate of a backlog.
        await receiver.reset();
        // Recorded in one transaction: the backlog becomes visible to the workers at once, on commit.
        const recordStarted = performance.now();
        await withContext(orm, () =>
          orm.em.transactional(async (em) => {
            for (let i = 0; i < BACKLOG; i++) {
              await outbox.record(em, withEndpoint.appId, 'customer.updated', {
                id: `cus_bench_${round}_${i}`,
                round,
              });
            }
          }),
        );
        const started = performance.now();
        const { count, distinct, lastAt } = await receiver.waitFor(BACKLOG, DRAIN_TIMEOUT_MS);
        if (count !== BACKLOG || distinct !== BACKLOG)
          throw new Error(`${label}: ${count} deliveries, ${distinct} distinct, of ${BACKLOG}`);
        const rate = BACKLOG / ((lastAt - started) / 1000);
        if (round > 0) rates.push(rate);
        console.log(
          `${label.padEnd(8)} delivery  ${rate.toFixed(0).padStart(6)} events/s  ` +
            `from commit to the last arrival (${BACKLOG} recorded in ${(started - recordStarted).toFixed(0)} ms; all delivered once)`,
        );

        // 2. The request that records an event, with and without an endpoint to record it for.
        for (const [side, app] of [
          ['with', withEndpoint],
          ['without', without],
        ]) {
          const result = await createCustomers(tollgate.url, app.apiKey, `${side}${round}`);
          if (round > 0) latency[side].push(result);
          console.log(
            `${label.padEnd(8)} POST /v1/customers ${side.padEnd(7)} endpoint ${result.rps.toFixed(0).padStart(6)} req/s  ` +
              `p50 ${result.p50.toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms  (${result.non201} not 201)`,
          );
        }
      }

      const m = (side, key) => median(latency[side].map((r) => r[key]));
      console.log('\n| measure | median | spread |');
      console.log('|---|---|---|');
      console.log(
        `| delivery rate (backlog of ${BACKLOG}) | ${median(rates).toFixed(0)} events/s | ${Math.min(...rates).toFixed(0)}–${Math.max(...rates).toFixed(0)} |`,
      );
      for (const side of ['with', 'without']) {
        const rps = latency[side].map((r) => r.rps);
        console.log(
          `| POST /v1/customers, ${side} endpoint | ${m(side, 'rps').toFixed(0)} req/s, p50 ${m(side, 'p50').toFixed(1)} ms, p99 ${m(side, 'p99').toFixed(1)} ms | ${Math.min(...rps).toFixed(0)}–${Math.max(...rps).toFixed(0)} req/s |`,
        );
      }
      console.log(
        `| added latency (median p50 / p99) | ${(m('with', 'p50') - m('without', 'p50')).toFixed(1)} ms / ${(m('with', 'p99') - m('without', 'p99')).toFixed(1)} ms | |`,
      );
      console.log(`\nload after: ${loadavg()}`);
    } finally {
      await jobs.stop();
      await orm.close(true);
      await tollgate.stop();
      receiver.stop();
    }
  });
}

/** BENCH_SECONDS of creating customers with distinct e-mails; latencies measured here. */
async function createCustomers(url, apiKey, tag) {
  let n = 0;
  const result = await load({
    url,
    connections: 10,
    duration: SECONDS,
    requests: [
      {
        method: 'POST',
        path: '/v1/customers',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ email: `b-${tag}-${n++}@example.com` }) }),
      },
    ],
  });
  const non201 = Object.entries(result.statusCodeStats ?? {})
    .filter(([code]) => code !== '201')
    .reduce((sum, [, v]) => sum + v.count, 0);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non201: non201 + result.errors + result.timeouts,
  };
}

/** The receiver in a child process (so it does not share an event loop with the load generator). */
async function startReceiver() {
  const child = fork(SELF, ['--receiver'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (message) =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send(message);
    });
  const { url } = await ask({ op: 'url' });
  return {
    url,
    reset: () => ask({ op: 'reset' }),
    async waitFor(count, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const state = await ask({ op: 'state' });
        if (state.count >= count || Date.now() > deadline) {
          // The receiver's clock is performance.timeOrigin-based like ours: convert its wall time.
          return { ...state, lastAt: state.lastAt - performance.timeOrigin };
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop: () => child.kill('SIGTERM'),
  };
}

function runReceiver() {
  let ids = new Set();
  let count = 0;
  let lastAt = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      ids.add(req.headers['webhook-id']);
      lastAt = performance.timeOrigin + performance.now();
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1', () => {
    process.on('message', (message) => {
      if (message.op === 'url') process.send({ url: `http://127.0.0.1:${server.address().port}` });
      else if (message.op === 'reset') {
        ids = new Set();
        count = 0;
        process.send({});
      } else process.send({ count, distinct: ids.size, lastAt });
    });
  });
}
