import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Stripe from 'stripe';
import request from 'supertest';
import { newId } from '../../src/core/ids.js';
import { connect, type Orm } from '../../src/db.js';
import { StripeEmulator } from '../../src/stripe-emulator/stripe-emulator.js';
import { eventually } from '../helpers/eventually.js';
import { startCli } from '../helpers/process.js';
import { RELAXED_DATABASE_TIMEOUTS } from '../helpers/server.js';

/**
 * A process killed between an overage consumption's commit and its report still reports it, once: a
 * real Tollgate process (its reports held back by OVERAGE_REPORT_DELAY_SECONDS) records an overage and
 * is killed (SIGKILL); the next process's sweep sends the meter event. Tollgate talks to a Stripe
 * emulator in this test's process, through a proxy that counts the meter events it is sent.
 */

let emulator: StripeEmulator;
let proxy: Server;
let proxyUrl: string;
let orm: Orm;
let dataDir: string;
/** Meter events sent to the emulator, by identifier. */
const sent = new Map<string, number>();
const running: ReturnType<typeof startCli>[] = [];

beforeAll(async () => {
  emulator = await StripeEmulator.start();
  const target = new URL(emulator.url);
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && req.url === '/v1/billing/meter_events') {
        const identifier = new URLSearchParams(body.toString()).get('identifier') ?? '';
        sent.set(identifier, (sent.get(identifier) ?? 0) + 1);
      }
      const forward = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  orm = await connect(process.env.TEST_DATABASE_URL!);
  dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-overage-'));
});
afterAll(async () => {
  for (const proc of running) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await Promise.all(running.map((proc) => proc.exited));
  await new Promise((resolve) => proxy.close(resolve));
  await emulator.close();
  await orm.close(true);
  await rm(dataDir, { recursive: true, force: true });
});

async function serve(
  env: Record<string, string>,
): Promise<{ base: string; proc: ReturnType<typeof startCli> }> {
  const proc = startCli(['serve'], {
    ...RELAXED_DATABASE_TIMEOUTS,
    DATABASE_URL: process.env.TEST_DATABASE_URL,
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    STRIPE_API_BASE: proxyUrl,
    STRIPE_SECRET_KEY: 'sk_test_overage_restart',
    STRIPE_WEBHOOK_SECRET: 'whsec_overage_restart',
    STRIPE_RECONCILE_INTERVAL_MINUTES: '0',
    ...env,
  });
  running.push(proc);
  const base = await eventually(
    () => {
      if (proc.child.exitCode !== null) throw new Error(`serve exited: ${proc.output.stderr}`);
      return /REST API\s+(http:\/\/\S+)\/v1/.exec(proc.output.stdout)?.[1];
    },
    { what: 'the banner', timeoutMs: 30_000 },
  );
  return { base, proc };
}

it('reports an overage recorded by a process killed before its report, once, after a restart', async () => {
  const stripe = new Stripe('sk_test_overage_restart', {
    host: '127.0.0.1',
    port: Number(new URL(emulator.url).port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
  const meter = await stripe.billing.meters.create({
    display_name: 'Calls',
    event_name: `calls_${randomBytes(5).toString('hex')}`,
    default_aggregation: { formula: 'sum' },
  });
  const overagePrice = await stripe.prices.create({
    product_data: { name: 'Calls overage' },
    currency: 'usd',
    unit_amount: 2,
    recurring: { interval: 'month', usage_type: 'metered', meter: meter.id },
  });
  const planPrice = await stripe.prices.create({
    product_data: { name: 'Plan' },
    currency: 'usd',
    unit_amount: 1000,
    recurring: { interval: 'month' },
  });
  const stripeCustomer = await stripe.customers.create({ email: 'overage-restart@example.com' });

  const schema = `jobs_${randomBytes(6).toString('hex')}`;
  const adminToken = `tg_admin_${randomBytes(16).toString('hex')}`;
  const env = { JOB_QUEUE_SCHEMA: schema, ADMIN_TOKEN: adminToken };
  // The first process holds its reports back for an hour: it dies before any is sent.
  const first = await serve({ ...env, OVERAGE_REPORT_DELAY_SECONDS: '3600' });
  const admin = (query: string, variables: object = {}) =>
    request(first.base)
      .post('/graphql')
      .set('authorization', `Bearer ${adminToken}`)
      .send({ query, variables });
  const created = await admin(
    'mutation { createApp(input: { name: "overage-restart" }) { apiKey app { id } } }',
  );
  const apiKey = created.body.data.createApp.apiKey as string;
  const appId = created.body.data.createApp.app.id as string;
  const plan = await admin(
    'mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }',
    {
      appId,
      input: {
        id: 'metered',
        name: 'Metered',
        stripePriceId: planPrice.id,
        features: { calls: { limit: 10, reset: 'month', overage: { stripePriceId: overagePrice.id } } },
      },
    },
  );
  expect(plan.body).toEqual({ data: { upsertPlan: { id: 'metered' } } });
  const customer = await request(first.base)
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email: 'overage-restart@example.com' });
  expect(customer.status).toBe(201);
  // The customer's subscription, as the checkout's notification would store it.
  await orm.em
    .fork()
    .getConnection()
    .execute(
      `insert into subscription (id, app_id, customer_id, plan_id, stripe_subscription_id, stripe_customer_id, status, current_period_end)
     select ?, ?, ?, p.id, ?, ?, 'active', now() + interval '30 days' from plan p where p.app_id = ? and p.slug = 'metered'`,
      [
        newId('sub'),
        appId,
        customer.body.id,
        `sub_${randomBytes(8).toString('hex')}`,
        stripeCustomer.id,
        appId,
      ],
    );
  const use = (base: string) =>
    request(base)
      .post('/v1/usage')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId: customer.body.id, feature: 'calls', amount: 15 });
  const used = await eventually(async () => {
    const res = await use(first.base);
    return res.body.allowed === true ? res : undefined;
  });
  expect(used.body).toMatchObject({
    allowed: true,
    amount: 15,
    balance: { used: 15, remaining: 0, overage: 5 },
  });
  const usageId = used.body.id as string;

  first.proc.child.kill('SIGKILL');
  await first.proc.exited;
  const pending = await orm.em
    .fork()
    .getConnection()
    .execute<{ overage: string; reported: boolean }[]>(
      'select overage, overage_reported_at is not null as reported from usage_record where id = ?',
      [usageId],
    );
  expect(pending).toEqual([{ overage: '5', reported: false }]);
  expect(sent.get(usageId)).toBeUndefined();

  // The next process's sweep finds the overage no one reported.
  const second = await serve(env);
  await eventually(() => (sent.get(usageId) === 1 ? true : undefined), {
    what: 'the meter event after the restart',
    timeoutMs: 30_000,
  });
  await eventually(async () => {
    const [row] = await orm.em
      .fork()
      .getConnection()
      .execute<{ reported: boolean }[]>(
        'select overage_reported_at is not null as reported from usage_record where id = ?',
        [usageId],
      );
    return row?.reported ? true : undefined;
  });
  const now = Math.floor(Date.now() / 1000);
  const summary = await stripe.billing.meters.listEventSummaries(meter.id, {
    customer: stripeCustomer.id,
    start_time: now - 3600,
    end_time: now + 3600,
  });
  expect(summary.data[0]!.aggregated_value).toBe(5);
  expect([...sent.entries()]).toEqual([[usageId, 1]]);
  second.proc.child.kill('SIGTERM');
  expect(await second.proc.exited).toBe(0);
}, 120_000);
