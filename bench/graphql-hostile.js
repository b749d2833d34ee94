/**
 * Hostile GraphQL documents: each is refused or answered in under 100 ms, and /healthz stays under
 * 100 ms p99 while they arrive.
 *
 * Starts Tollgate from dist/ (`npm run build` first) against a scratch database it creates and drops,
 * with the request rate limits raised out of the way (what is measured is the GraphQL hardening, not
 * the rate limiter). Then, over loopback:
 *   1. each hostile document (a few KB: deep fragment chains, many aliases, many spreads, many same-named
 *      fields with other arguments, nesting 2 650 deep), from an anonymous caller and from an API key, sent BENCH_SAMPLES times in a row: status,
 *      error code, p50/p99/max latency;
 *   2. /healthz latency (autocannon, 2 connections at 100 req/s) in interleaved rounds, alone and while a
 *      separate process sends every hostile document in turn on BENCH_HOSTILE_CONNECTIONS connections at
 *      BENCH_HOSTILE_RATE documents per second (a bounded rate: the question is whether a document blocks
 *      the event loop, not how many refusals per second two cores can write).
 *   3. /healthz latency the same way, alone and while one API key loops on the same-name and deep
 *      documents (BENCH_LOOP_CONNECTIONS connections, each sending the next as soon as the last is answered:
 *      no rate bound), goal: /healthz p99 within 2x of idle.
 * Prints the machine's load (/proc/loadavg) with the figures; exit code 1 if a document gets anything but
 * 200/400, its p99 reaches 100 ms, or /healthz p99 under load reaches 100 ms.
 *
 *   node bench/graphql-hostile.js    # BENCH_DURATION=8 BENCH_ROUNDS=2 BENCH_SAMPLES=50
 *                                    # BENCH_HOSTILE_CONNECTIONS=10 BENCH_HOSTILE_RATE=200
 */
import { getIntrospectionQuery } from 'graphql';
import {
  createApp,
  graphql,
  load,
  loadavg,
  loadInChild,
  median,
  percentile,
  startTollgate,
  withScratchDatabase,
} from './support.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const HOSTILE_CONNECTIONS = Number(process.env.BENCH_HOSTILE_CONNECTIONS ?? 10);
/** Hostile documents per second, all connections together: what is measured is whether one blocks the loop. */
const HOSTILE_RATE = Number(process.env.BENCH_HOSTILE_RATE ?? 200);
/** Connections of the one API key that loops on the same-name and deep documents (section 3). */
const LOOP_CONNECTIONS = Number(process.env.BENCH_LOOP_CONNECTIONS ?? 1);
const WARMUP = 5;
const LIMIT_MS = 100;

/** `n` fragments, each spreading the previous one twice: 2^n fields once expanded. */
function spreadChain(n) {
  let doc = `query { ...F${n} }\n`;
  doc += 'fragment F0 on Query { customers(limit: 100) { data { id email name metadata } } }\n';
  for (let i = 1; i <= n; i++) doc += `fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }\n`;
  return doc;
}

const HOSTILE = {
  'fragment chain x19 (39 spreads)': spreadChain(19),
  'fragment chain x49 (99 spreads)': spreadChain(49),
  '80 aliases of customers': `{ ${Array.from({ length: 80 }, (_, i) => `a${i}: customers(limit: 1) { pagination { total } }`).join(' ')} }`,
  '20 aliases x 5 nested lists': `{ ${Array.from({ length: 20 }, (_, i) => `a${i}: customers(limit: 100) { data { subscriptions { plan { name } } } }`).join(' ')} }`,
  '1000 spreads of one fragment': `{ ${'...F '.repeat(1000)}} fragment F on Query { __typename }`,
  '166 same-named fields (overlap check)': `{${' customers { data { id } }'.repeat(166)} }`,
  '4 KB of __typename': `{${' __typename'.repeat(370)} }`,
  // Each field of one response name with other arguments: the overlapping-fields rule compares every pair.
  '500 same-name fields, other arguments': `{${Array.from({ length: 500 }, (_, i) => ` c(x: ${i})`).join('')} }`,
  'same name x16 in 30 fragments': `{ ${Array.from({ length: 30 }, (_, f) => `...F${f}`).join(' ')} }\n${Array.from({ length: 30 }, (_, f) => `fragment F${f} on Query {${Array.from({ length: 16 }, (_, i) => ` c(x: ${f * 16 + i})`).join('')} }`).join('\n')}`,
  'selections nested 2650 deep': `${'{a'.repeat(2650)}${'}'.repeat(2650)}`,
  'list argument nested 2650 deep': `{ f(x: ${'['.repeat(2650)}1${']'.repeat(2650)}) }`,
};

const LEGIT = {
  'introspection query': getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }),
  'one page of customers': '{ customers(limit: 100) { data { id email name metadata createdAt } } }',
};

await withScratchDatabase('tollgate_bench_hostile', async (databaseUrl) => {
  const tollgate = await startTollgate(databaseUrl, {
    RATE_LIMIT_API_KEY: '1000000000',
    RATE_LIMIT_PUBLIC_IP: '1000000000',
  });
  let failed = false;
  try {
    const { apiKey } = await createApp(tollgate.url, tollgate.adminToken, 'hostile-bench');
    const callers = { anonymous: undefined, 'API key': apiKey };
    console.log(`load before: ${loadavg()}`);
    console.log(
      `\n1. each document ${WARMUP} times to warm up, then ${SAMPLES} times in a row (client-side latency, loopback)\n`,
    );
    console.log(
      `${'document'.padEnd(40)}${'caller'.padEnd(11)}${'bytes'.padStart(6)}  status  ${'code'.padEnd(32)}p50     p99     max`,
    );
    for (const [name, query] of Object.entries({ ...HOSTILE, ...LEGIT })) {
      for (const [who, token] of Object.entries(callers)) {
        if (name === 'one page of customers' && !token) continue;
        for (let i = 0; i < WARMUP; i++) await graphql(tollgate.url, query, token);
        const times = [];
        let last;
        for (let i = 0; i < SAMPLES; i++) {
          last = await graphql(tollgate.url, query, token);
          times.push(last.ms);
          if (last.status !== 200 && last.status !== 400) failed = true;
        }
        const code = last.body.errors?.[0]?.extensions?.code ?? (last.body.data ? 'answered' : '?');
        const p99 = percentile(times, 99);
        if (p99 >= LIMIT_MS) failed = true;
        console.log(
          `${name.padEnd(40)}${who.padEnd(11)}${String(Buffer.byteLength(query)).padStart(6)}  ${String(last.status).padEnd(8)}${code.padEnd(32)}` +
            `${percentile(times, 50).toFixed(1).padStart(5)}  ${p99.toFixed(1).padStart(6)}  ${Math.max(
              ...times,
            )
              .toFixed(1)
              .padStart(6)}`,
        );
      }
    }

    const requests = [];
    for (const query of Object.values(HOSTILE)) {
      for (const token of Object.values(callers)) {
        requests.push({
          method: 'POST',
          path: '/graphql',
          headers: {
            'content-type': 'application/json',
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          body: JSON.stringify({ query }),
        });
      }
    }
    console.log(
      `\n2. /healthz (2 connections, 100 req/s, ${DURATION} s) alone and while ${HOSTILE_CONNECTIONS} connections ` +
        `send the ${requests.length} hostile requests in turn at ${HOSTILE_RATE}/s; ${ROUNDS} interleaved rounds\n`,
    );
    const idle = [];
    const loaded = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const alone = await healthz(tollgate.url);
      idle.push(alone.latency.p99);
      console.log(
        `round ${round} idle    /healthz p50 ${alone.latency.p50} ms  p99 ${alone.latency.p99} ms  max ${alone.latency.max} ms  (${alone.requests.total} requests, ${alone.non2xx} not 2xx)  load ${loadavg()}`,
      );
      const hostile = loadInChild({
        url: tollgate.url,
        connections: HOSTILE_CONNECTIONS,
        overallRate: HOSTILE_RATE,
        duration: DURATION,
        requests,
      });
      const during = await healthz(tollgate.url);
      const attack = await hostile;
      // The next round starts once the documents still in flight are done.
      await graphql(tollgate.url, '{ __typename }', apiKey);
      loaded.push(during.latency.p99);
      console.log(
        `round ${round} hostile /healthz p50 ${during.latency.p50} ms  p99 ${during.latency.p99} ms  max ${during.latency.max} ms  (${during.requests.total} requests, ${during.non2xx} not 2xx)  load ${loadavg()}`,
      );
      console.log(
        `        hostile load: ${attack.requests} requests (${attack.rps.toFixed(0)}/s), p50 ${attack.p50} ms, p99 ${attack.p99} ms, max ${attack.max} ms, statuses ${JSON.stringify(Object.fromEntries(Object.entries(attack.statusCodes).map(([k, v]) => [k, v.count])))}`,
      );
      const unexpected = Object.keys(attack.statusCodes).filter((code) => code !== '200' && code !== '400');
      if (unexpected.length > 0 || attack.errors > 0 || during.non2xx > 0) failed = true;
    }
    const looped = Object.entries(HOSTILE)
      .filter(([name]) => /same-name|nested/.test(name))
      .map(([, query]) => ({
        method: 'POST',
        path: '/graphql',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ query }),
      }));
    console.log(
      `\n3. /healthz (2 connections, 100 req/s, ${DURATION} s) alone and while one API key loops on the ` +
        `${looped.length} same-name and deep documents on ${LOOP_CONNECTIONS} connection(s), no rate bound; ` +
        `${ROUNDS} interleaved rounds\n`,
    );
    const loopIdle = [];
    const loopLoaded = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const alone = await healthz(tollgate.url);
      loopIdle.push(alone.latency.p99);
      console.log(
        `round ${round} idle    /healthz p50 ${alone.latency.p50} ms  p99 ${alone.latency.p99} ms  max ${alone.latency.max} ms  load ${loadavg()}`,
      );
      const loop = loadInChild({
        url: tollgate.url,
        connections: LOOP_CONNECTIONS,
        duration: DURATION,
        requests: looped,
      });
      const during = await healthz(tollgate.url);
      const attack = await loop;
      await graphql(tollgate.url, '{ __typename }', apiKey);
      loopLoaded.push(during.latency.p99);
      console.log(
        `round ${round} looping /healthz p50 ${during.latency.p50} ms  p99 ${during.latency.p99} ms  max ${during.latency.max} ms  load ${loadavg()}`,
      );
      console.log(
        `        the key's loop: ${attack.requests} requests (${attack.rps.toFixed(0)}/s), p50 ${attack.p50} ms, p99 ${attack.p99} ms, statuses ${JSON.stringify(Object.fromEntries(Object.entries(attack.statusCodes).map(([k, v]) => [k, v.count])))}`,
      );
      const unexpected = Object.keys(attack.statusCodes).filter((code) => code !== '400');
      if (unexpected.length > 0 || attack.errors > 0 || during.non2xx > 0) failed = true;
    }
    console.log(
      `\n/healthz p99 idle: median ${median(loopIdle)} ms; while one key loops: median ${median(loopLoaded)} ms ` +
        `(ratio ${(median(loopLoaded) / median(loopIdle)).toFixed(2)}, goal within 2x)`,
    );

    const worst = Math.max(...loaded);
    console.log(
      `\n/healthz p99 idle: median ${median(idle)} ms (${Math.min(...idle)}-${Math.max(...idle)}); ` +
        `under hostile load: median ${median(loaded)} ms (${Math.min(...loaded)}-${worst})`,
    );
    if (worst >= LIMIT_MS) failed = true;
    console.log(`load after: ${loadavg()}`);
    console.log(
      `target (documents < ${LIMIT_MS} ms p99, /healthz p99 < ${LIMIT_MS} ms under load): ${failed ? 'NOT met' : 'met'}`,
    );
    process.exitCode = failed ? 1 : 0;
  } finally {
    await tollgate.stop();
  }
});

function healthz(url) {
  return load({ url: `${url}/healthz`, connections: 2, overallRate: 100, duration: DURATION });
}
