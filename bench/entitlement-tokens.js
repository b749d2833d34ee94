/**
 * Benchmark of entitlement tokens (modules/entitlement-tokens), on a scratch database, loopback only:
 *   1. `has()` on a verified token, in process (the client library's check): checks per second;
 *   2. the first verification with a cold JWKS (a fresh `createRemoteJWKSet`: fetch, import, verify):
 *      median and p95 of BENCH_COLD_RUNS;
 *   3. issuance (`POST /v1/apps/:appId/auth/entitlement-token`) against the session lookup
 *      (`GET /v1/apps/:appId/auth/session`), the same session token, interleaved A/B rounds: medians
 *      and spread of throughput, of each round's ratio, and of Tollgate's CPU time per request (from
 *      /proc, which moves far less than throughput when other work shares the machine). A repeat with
 *      the same claims gets the token signed moments before (the service's reuse window), so this is the
 *      cost of a client asking again;
 *   4. issuance that signs every time: an API key naming a different customer on each request (from
 *      BENCH_FRESH_CUSTOMERS, more than the run sends), which also reads that customer from the database.
 * Tollgate from dist/ runs in a child process, the load in another (bench/support.js).
 *
 *   npm run build && node bench/entitlement-tokens.js   # BENCH_DURATION=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=20
 *                                                       # BENCH_PROFILE_DIR=… (a CPU profile of Tollgate)
 */
import { createRemoteJWKSet, jwtVerify } from 'jose';
import {
  createApp,
  dist,
  load,
  loadavg,
  loadInChild,
  median,
  percentile,
  startTollgate,
  withScratchDatabase,
} from './support.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 30);
const FRESH_CUSTOMERS = Number(process.env.BENCH_FRESH_CUSTOMERS ?? 100_000);

const { verifyEntitlementToken, TollgateAuth } = await import(
  new URL('../packages/client/dist/index.js', import.meta.url).href
).catch(() => ({}));

await withScratchDatabase('tollgate_bench_etk', async (databaseUrl) => {
  const tollgate = await startTollgate(databaseUrl, {
    RATE_LIMIT_SESSION: '1000000000',
    RATE_LIMIT_API_KEY: '1000000000',
    LOG_LEVEL: 'warn',
  });
  try {
    const { appId, apiKey } = await createApp(tollgate.url, tollgate.adminToken, 'bench');
    const headers = (token) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
    const post = (path, token, body) =>
      fetch(`${tollgate.url}${path}`, {
        method: 'POST',
        headers: headers(token),
        body: JSON.stringify(body),
      });
    await (
      await fetch(`${tollgate.url}/graphql`, {
        method: 'POST',
        headers: headers(tollgate.adminToken),
        body: JSON.stringify({
          query: `mutation($appId: ID!) { upsertPlan(appId: $appId, input: {id: "free", name: "Free", isDefault: true,
            features: {sso: true, seats: 5, tier: "gold", projects: 10}}) { id } }`,
          variables: { appId },
        }),
      })
    ).json();
    const customer = await (await post('/v1/customers', apiKey, { email: 'bench@example.com' })).json();
    const sessionToken = await sessionFor(databaseUrl, appId, customer.id);

    const issued = await (await post(`/v1/apps/${appId}/auth/entitlement-token`, sessionToken, {})).json();
    const jwksUrl = new URL(`${tollgate.url}/v1/apps/${appId}/.well-known/jwks.json`);
    const options = { audience: appId };

    // 1. has() on a verified token.
    let checks = 0;
    let verified;
    if (verifyEntitlementToken) {
      const auth = new TollgateAuth({ appId, baseUrl: tollgate.url });
      verified = await auth.verifyEntitlementToken(issued.token);
    } else {
      const { payload } = await jwtVerify(issued.token, createRemoteJWKSet(jwksUrl), options);
      verified = { has: (f) => Object.hasOwn(payload.ent, f) && payload.ent[f] !== false };
    }
    const names = ['sso', 'seats', 'tier', 'missing'];
    const rates = [];
    for (let round = 0; round < 5; round++) {
      const started = performance.now();
      let granted = 0;
      for (let i = 0; i < 2_000_000; i++) if (verified.has(names[i & 3])) granted++;
      const ms = performance.now() - started;
      checks += 2_000_000;
      rates.push(2_000_000 / (ms / 1000));
      if (granted !== 1_500_000) throw new Error(`has() answered ${granted} grants of 1500000`);
    }
    console.log(
      `has(): median ${Math.round(median(rates)).toLocaleString('en')} checks/s (${checks} checks)`,
    );

    // 2. Cold first verification: a fresh remote key set each time.
    const cold = [];
    for (let i = 0; i < COLD_RUNS; i++) {
      const keys = createRemoteJWKSet(jwksUrl);
      const started = performance.now();
      await jwtVerify(issued.token, keys, options);
      cold.push(performance.now() - started);
    }
    console.log(
      `cold first verification: median ${median(cold).toFixed(2)} ms, p95 ${percentile(cold, 95).toFixed(2)} ms (${COLD_RUNS} runs)`,
    );

    // 3. Issuance against the session lookup, interleaved.
    const run = (method, path) =>
      loadInChild({
        url: `${tollgate.url}${path}`,
        method,
        headers: headers(sessionToken),
        body: method === 'POST' ? '{}' : undefined,
        connections: CONNECTIONS,
        duration: DURATION,
      });
    await run('POST', `/v1/apps/${appId}/auth/entitlement-token`); // warm-up
    await run('GET', `/v1/apps/${appId}/auth/session`);
    const issuance = [];
    const lookup = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [list, method, path] of [
        [issuance, 'POST', `/v1/apps/${appId}/auth/entitlement-token`],
        [lookup, 'GET', `/v1/apps/${appId}/auth/session`],
      ]) {
        const cpuBefore = tollgate.cpu();
        const result = await run(method, path);
        result.cpuUs = ((tollgate.cpu() - cpuBefore) * 1000) / Math.max(1, result.requests);
        const non2xx = Object.entries(result.statusCodes).filter(([code]) => code !== '200');
        if (non2xx.length > 0 || result.errors > 0)
          throw new Error(
            `${method} ${path}: ${JSON.stringify(result.statusCodes)}, ${result.errors} errors`,
          );
        list.push(result);
      }
    }
    const rps = (list) => median(list.map((r) => r.rps));
    const p99 = (list) => median(list.map((r) => r.p99));
    const cpu = (list) => median(list.map((r) => r.cpuUs));
    const spread = (values, digits = 0) =>
      `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
    for (const [name, list] of [
      ['issuance', issuance],
      ['session lookup', lookup],
    ]) {
      console.log(
        `${name}: median ${Math.round(rps(list))} req/s (${spread(list.map((r) => r.rps))}), p99 ${p99(list)} ms, ` +
          `CPU ${Math.round(cpu(list))} µs/req (${spread(list.map((r) => r.cpuUs))})`,
      );
    }
    const ratios = issuance.map((r, i) => r.rps / lookup[i].rps);
    console.log(
      `issuance / session lookup: ${(rps(issuance) / rps(lookup)).toFixed(2)} (target ≥ 0.8); ` +
        `per round ${spread(ratios, 2)}; CPU per request ${(cpu(issuance) / cpu(lookup)).toFixed(2)}×`,
    );

    // 4. Issuance that signs every time: each request names a customer no earlier request named.
    const fresh = await customersFor(databaseUrl, appId, FRESH_CUSTOMERS);
    let next = 0;
    const signing = [];
    for (let round = 0; round < ROUNDS; round++) {
      const cpuBefore = tollgate.cpu();
      const result = await load({
        url: `${tollgate.url}/v1/apps/${appId}/auth/entitlement-token`,
        method: 'POST',
        headers: headers(apiKey),
        connections: CONNECTIONS,
        duration: DURATION,
        requests: [
          {
            setupRequest: (request) => {
              if (next >= fresh.length) throw new Error('BENCH_FRESH_CUSTOMERS is too small for the run');
              return { ...request, body: JSON.stringify({ customerId: fresh[next++] }) };
            },
          },
        ],
      });
      const non200 = result.requests.total - (result['2xx'] ?? 0);
      if (non200 > 0 || result.errors > 0)
        throw new Error(`fresh issuance: ${non200} not 200, ${result.errors} errors`);
      signing.push({
        rps: result.requests.average,
        cpuUs: ((tollgate.cpu() - cpuBefore) * 1000) / Math.max(1, result.requests.total),
        p99: result.latency.p99,
      });
    }
    console.log(
      `issuance signing each time (API key, a new customer per request): median ${Math.round(rps(signing))} req/s ` +
        `(${spread(signing.map((r) => r.rps))}), p99 ${p99(signing)} ms, CPU ${Math.round(cpu(signing))} µs/req ` +
        `(${spread(signing.map((r) => r.cpuUs))}); ${next} customers named`,
    );
    console.log(`load average: ${loadavg()}`);
  } finally {
    await tollgate.stop();
  }
});

/** `count` customers of the app, written in one statement; their ids. */
async function customersFor(databaseUrl, appId, count) {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `insert into customer (id, app_id, email, email_lower, metadata, created_at, updated_at)
       select 'cus_fresh' || i, $1, 'fresh-' || i || '@example.com', 'fresh-' || i || '@example.com', '{}', now(), now()
         from generate_series(1, $2::int) i
       returning id`,
      [appId, count],
    );
    return rows.map((r) => r.id);
  } finally {
    await client.end();
  }
}

/** A session token for the customer, written as the login flow writes one (only its hash is kept). */
async function sessionFor(databaseUrl, appId, customerId) {
  const { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } = await import(dist('core/tokens.js'));
  const { newId } = await import(dist('core/ids.js'));
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const token = randomSecret(SESSION_TOKEN_PREFIX);
    await client.query(
      `insert into session (id, app_id, customer_id, organization_id, token_hash, created_at, expires_at)
       values ($1, $2, $3, null, $4, now(), now() + interval '1 day')`,
      [newId('ses'), appId, customerId, hashSecret(token)],
    );
    return token;
  } finally {
    await client.end();
  }
}
