/**
 * What an `Idempotency-Key` costs on `POST /v1/customers`, in one Tollgate process (built dist/):
 *   plain     a new customer per request, no header
 *   keyed     a new customer per request, each with a new key (the record is claimed, then the answer stored)
 *   replay    one key and one body sent again and again (every answer is the stored first one)
 * On a scratch database (DATABASE_URL's server, else the local one; dropped afterwards), autocannon over
 * loopback in this process, BENCH_CONNECTIONS connections, BENCH_ROUNDS interleaved rounds of
 * BENCH_DURATION seconds per case. Prints medians of requests/s and of p99 latency with the machine's
 * load, and exits 1 when an answer is not the expected one (201, every replay marked as such).
 *
 *   node bench/idempotency.js   # BENCH_ROUNDS=3 BENCH_DURATION=5 BENCH_CONNECTIONS=10
 */
import { randomBytes } from 'node:crypto';
import { createApp, load, loadavg, median, startTollgate, withScratchDatabase } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

let counter = 0;
const unique = () => `${process.pid}-${Date.now()}-${counter++}-${randomBytes(3).toString('hex')}`;

function run(url, apiKey, name) {
  const replayKey = `replay-${unique()}`;
  const replayBody = JSON.stringify({ email: `replay-${unique()}@example.com` });
  return load({
    url: `${url}/v1/customers`,
    connections: CONNECTIONS,
    duration: DURATION,
    requests: [
      {
        method: 'POST',
        setupRequest(request) {
          const headers = {
            ...request.headers,
            'content-type': 'application/json',
            authorization: `Bearer ${apiKey}`,
          };
          if (name === 'replay')
            return { ...request, headers: { ...headers, 'idempotency-key': replayKey }, body: replayBody };
          const body = JSON.stringify({ email: `bench-${unique()}@example.com` });
          if (name === 'keyed') headers['idempotency-key'] = unique();
          return { ...request, headers, body };
        },
      },
    ],
  });
}

await withScratchDatabase('tollgate_bench_idem', async (databaseUrl) => {
  const tollgate = await startTollgate(databaseUrl, { RATE_LIMIT_API_KEY: '100000000', LOG_LEVEL: 'silent' });
  try {
    const { apiKey } = await createApp(tollgate.url, tollgate.adminToken, 'idempotency-bench');
    console.log(
      `${CONNECTIONS} connections, ${ROUNDS} interleaved rounds × ${DURATION} s per case, loopback`,
    );
    console.log(`load before: ${loadavg()}\n`);
    const cases = ['plain', 'keyed', 'replay'];
    const results = Object.fromEntries(cases.map((name) => [name, []]));
    let wrong = 0;
    await run(tollgate.url, apiKey, 'plain'); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of cases) {
        const result = await run(tollgate.url, apiKey, name);
        results[name].push(result);
        wrong += result.non2xx + result.errors;
      }
    }
    for (const name of cases) {
      const rps = median(results[name].map((r) => r.requests.average));
      const p50 = median(results[name].map((r) => r.latency.p50));
      const p99 = median(results[name].map((r) => r.latency.p99));
      console.log(`${name.padEnd(7)} ${rps.toFixed(0).padStart(6)} req/s   p50 ${p50} ms   p99 ${p99} ms`);
    }
    const plain = median(results.plain.map((r) => r.requests.average));
    const keyed = median(results.keyed.map((r) => r.requests.average));
    console.log(`\nkeyed / plain throughput: ${(keyed / plain).toFixed(2)}`);
    console.log(`load after: ${loadavg()}`);
    if (wrong > 0) {
      console.error(`${wrong} answers were not 2xx`);
      process.exitCode = 1;
    }
  } finally {
    await tollgate.stop();
  }
});
