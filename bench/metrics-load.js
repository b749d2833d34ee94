/**
 * A short load run against a production-mode Tollgate (the built CLI, as deployed behind a proxy),
 * then its `/metrics`: what an operator's Prometheus would scrape after it. Bounded in count, loopback only.
 *
 *   npm run build && node bench/metrics-load.js     # uses DATABASE_URL's server for a scratch database
 *
 * Requests (autocannon, 10 connections each): customer reads (200), entitlement checks (100), unknown
 * customers (50), unknown paths from one anonymous client (70: its per-IP budget is 60), forged Stripe
 * notifications (20) and requests the proxy received over plain HTTP (20). Prints the load average,
 * each batch's status counts, and the exposition (histogram buckets and Node's own series left out).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';

const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;

const { createScratchDatabase, dropDatabase } = await import(dist('core/database-admin.js'));
const name = `tollgate_metrics_${process.pid}_${Date.now()}`;
const databaseUrl = await createScratchDatabase(SERVER_URL, name);
const adminToken = `tg_admin_${randomBytes(16).toString('hex')}`;
const metricsToken = `metrics_${randomBytes(16).toString('hex')}`;
const child = spawn(process.execPath, [new URL('../dist/src/main.js', import.meta.url).pathname, 'serve'], {
  env: {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    PORT: '0',
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN: adminToken,
    PUBLIC_BASE_URL: 'https://billing.example.com',
    STRIPE_SECRET_KEY: 'sk_test_bench',
    STRIPE_WEBHOOK_SECRET: 'whsec_bench',
    STRIPE_API_BASE: 'http://127.0.0.1:9',
    SMTP_URL: 'smtp://127.0.0.1:9',
    MAIL_FROM: 'Bench <bench@example.com>',
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    TRUST_PROXY: 'loopback',
    METRICS_TOKEN: metricsToken,
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const base = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const match = /REST API\s+(http:\/\/\S+)\/v1/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const https = { 'x-forwarded-proto': 'https', 'content-type': 'application/json' };
  const post = async (path, body, token) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...https, authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    return res.json();
  };
  const created = await post(
    '/graphql',
    { query: 'mutation { createApp(input: {name: "bench"}) { apiKey app { id } } }' },
    adminToken,
  );
  const { apiKey, app } = created.data.createApp;
  await post(
    '/graphql',
    {
      query: `mutation($appId: ID!) { upsertPlan(appId: $appId, input: {id: "free", name: "Free", isDefault: true, features: {sso: false}}) { id } }`,
      variables: { appId: app.id },
    },
    adminToken,
  );
  const customer = await post('/v1/customers', { email: 'load@example.com' }, apiKey);
  const keyed = { ...https, authorization: `Bearer ${apiKey}` };

  console.log(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const batches = [
    ['GET /v1/customers/:id', { path: `/v1/customers/${customer.id}`, headers: keyed, amount: 200 }],
    [
      'GET /v1/entitlements/check/:feature',
      { path: `/v1/entitlements/check/sso?customerId=${customer.id}`, headers: keyed, amount: 100 },
    ],
    ['GET unknown customer', { path: '/v1/customers/cus_missing', headers: keyed, amount: 50 }],
    ['GET unknown path, anonymous', { path: '/no/such/path', headers: https, amount: 70 }],
    [
      'POST forged Stripe notification',
      {
        path: '/v1/webhooks/stripe',
        method: 'POST',
        headers: { ...https, 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
        body: '{"id":"evt_forged","type":"checkout.session.completed"}',
        amount: 20,
      },
    ],
    [
      'GET over plain HTTP',
      { path: `/v1/customers/${customer.id}`, headers: { 'x-forwarded-proto': 'http' }, amount: 20 },
    ],
  ];
  for (const [label, options] of batches) {
    const { path, ...rest } = options;
    const result = await autocannon({ url: `${base}${path}`, connections: 10, ...rest });
    const statuses = Object.entries(result.statusCodeStats ?? {})
      .map(([code, { count }]) => `${code}×${count}`)
      .join(' ');
    console.log(
      `${label.padEnd(36)} ${String(result.requests.total).padStart(4)} requests  ${statuses}  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms`,
    );
  }
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );

  const metrics = await (
    await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
  ).text();
  const shown = metrics
    .split('\n')
    .filter((line) => line && !line.includes('_bucket{') && !/^(# (HELP|TYPE) )?nodejs_/.test(line));
  console.log(shown.join('\n'));
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
  await dropDatabase(SERVER_URL, name);
}
