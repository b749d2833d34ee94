#!/usr/bin/env node
// What CORS costs a browser's request: an entitlement check with a session token, sent without an
// Origin (a server), from an allowed origin (a browser page: the app's patterns are read), and the
// preflight a browser sends first (answered before counting). Loopback, autocannon, bounded in time:
// three interleaved rounds of BENCH_SECONDS (default 5) per variant.
//   npm run build && node bench/cors.js
import { load, loadavg, median, startTollgate, withScratchDatabase } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ORIGIN = 'https://shop.example.com';

async function json(url, init) {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

await withScratchDatabase('bench_cors', async (databaseUrl) => {
  const tollgate = await startTollgate(databaseUrl, { RATE_LIMIT_SESSION: '100000000', LOG_LEVEL: 'warn' });
  try {
    const { url, adminToken } = tollgate;
    const created = await json(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({
        query: 'mutation($input: CreateAppInput!) { createApp(input: $input) { app { id } } }',
        variables: {
          input: { name: 'bench-cors', allowedCallbackUrls: `${ORIGIN}/callback\nhttps://*.example.org/*` },
        },
      }),
    });
    const appId = created.body.data.createApp.app.id;
    const email = 'bench@example.com';
    await json(`${url}/v1/apps/${appId}/auth/magic-link`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, redirectUrl: `${ORIGIN}/callback` }),
    });
    let token;
    for (let i = 0; i < 50 && !token; i++) {
      const mailbox = await json(`${url}/dev/mailbox.json`);
      const mail = mailbox.body.messages.find((m) => m.to === email);
      if (mail) token = new URL(/https?:\/\/\S+/.exec(mail.text)[0]).searchParams.get('token');
      else await new Promise((r) => setTimeout(r, 100));
    }
    const verified = await json(`${url}/v1/apps/${appId}/auth/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    const session = verified.body.sessionToken;
    const target = `${url}/v1/entitlements/check/export`;
    const variants = {
      'no Origin (server)': { method: 'GET', headers: { authorization: `Bearer ${session}` } },
      'allowed Origin (browser)': {
        method: 'GET',
        headers: { authorization: `Bearer ${session}`, origin: ORIGIN },
      },
      'preflight (OPTIONS)': {
        method: 'OPTIONS',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      },
    };
    const results = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
    for (let round = 0; round < 3; round++) {
      for (const [name, request] of Object.entries(variants)) {
        const r = await load({ url: target, ...request, connections: CONNECTIONS, duration: SECONDS });
        const bad = r.non2xx + r.errors;
        results[name].push({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad });
      }
    }
    console.log(`load average at the end: ${loadavg()}`);
    for (const [name, runs] of Object.entries(results)) {
      console.log(
        `${name.padEnd(26)} median of 3: ${Math.round(median(runs.map((r) => r.rps)))} req/s, p50 ${median(runs.map((r) => r.p50))} ms, p99 ${median(runs.map((r) => r.p99))} ms, non-2xx+errors ${runs.reduce((n, r) => n + r.bad, 0)}`,
      );
    }
  } finally {
    await tollgate.stop();
  }
});
