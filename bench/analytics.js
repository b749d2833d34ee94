/**
 * Benchmark of subscription analytics: reading a year of figures, and what recording MRR movements adds to
 * a plan change.
 *
 * On a migrated scratch database (DATABASE_URL's server, else postgres://postgres@127.0.0.1:5432/postgres)
 * it starts Tollgate from dist/ (`npm run build` first) in this process, with its in-process Stripe
 * emulator, then:
 *   1. seeds one app with BENCH_SUBSCRIPTIONS subscriptions (default 100 000) and twelve months of their
 *      movements (new, expansion, contraction, churn, reactivation) and daily totals, in a few set-based
 *      statements (the rows `SubscriptionEvents` would have written, not 100 000 API calls);
 *   2. measures `GET /v1/analytics` over HTTP for the last twelve months by day and by month,
 *      BENCH_QUERIES sequential requests each after a warm-up, and reports p50 and p95 (targets: by day
 *      p50 < 200 ms, by month p50 < 50 ms);
 *   3. measures a plan change (`changeSubscriptionPlan`: the Stripe calls to the emulator, the row, its
 *      outbound events) on subscriptions made at the emulator, interleaved A/B: A as Tollgate runs it,
 *      recording its movement; B the same service with recording off. Reports the medians and the
 *      median of the paired differences relative to B's median (target < 10 %).
 * Exit code 1 when a target is missed.
 *
 *   node bench/analytics.js    # BENCH_SUBSCRIPTIONS=100000 BENCH_QUERIES=30 BENCH_PLAN_CHANGES=100
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import 'reflect-metadata';
import Stripe from 'stripe';
import { dist, withScratchDatabase } from './support.js';

const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 30);
const PLAN_CHANGES = Number(process.env.BENCH_PLAN_CHANGES ?? 100);
const DAY_MS = 86_400_000;

const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);
const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const round = (ms) => Math.round(ms * 10) / 10;

await withScratchDatabase('tollgate_bench_analytics', async (url) => {
  const { loadConfig } = await import(dist('config.js'));
  const { startServer } = await import(dist('server.js'));
  const { withContext } = await import(dist('db.js'));
  const { createLogger } = await import(dist('infra/logger.js'));
  const { SubscriptionEvents } = await import(dist('modules/subscriptions/subscription-events.js'));
  const { SubscriptionLifecycleService } = await import(
    dist('modules/subscriptions/subscription-lifecycle.service.js')
  );
  const config = loadConfig({
    DATABASE_URL: url,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_TOKEN: `tg_admin_bench_${randomBytes(16).toString('hex')}`,
    LOG_LEVEL: 'silent',
    STRIPE_EMULATOR_PORT: '0',
    STRIPE_RECONCILE_INTERVAL_MINUTES: '0',
    // The seed's set-based statements take longer than a request may: bounds for the seed, not the reads.
    DATABASE_QUERY_TIMEOUT_MS: '600000',
    DATABASE_STATEMENT_TIMEOUT_MS: '590000',
  });
  const server = await startServer(config, { seedDemo: false, logger: createLogger('silent') });
  const failures = [];
  try {
    console.log(
      `load average before: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const graphql = async (query, variables = {}) => {
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${server.adminToken}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = await res.json();
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      return body.data;
    };
    const { createApp } = await graphql(
      'mutation { createApp(input: { name: "bench" }) { app { id } apiKey } }',
    );
    const appId = createApp.app.id;
    const apiKey = createApp.apiKey;
    const sql = (text, params = []) => server.deps.orm.em.getConnection().execute(text, params, 'all');

    // 1. The seed.
    const started = performance.now();
    await seed(sql, appId);
    const [{ movements }] = await sql(
      'select count(*)::int as movements from mrr_movement where app_id = ?',
      [appId],
    );
    const [{ days }] = await sql('select count(*)::int as days from mrr_daily where app_id = ?', [appId]);
    console.log(
      `seeded ${SUBSCRIPTIONS} subscriptions, ${movements} movements, ${days} daily rows in ${round((performance.now() - started) / 1000)} s`,
    );

    // 2. Reading twelve months.
    const to = isoDay(Date.now());
    const from = isoDay(Date.now() - 364 * DAY_MS);
    const read = async (interval) => {
      const t = performance.now();
      const res = await fetch(`${server.url}/v1/analytics?from=${from}&to=${to}&interval=${interval}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const body = await res.json();
      const ms = performance.now() - t;
      if (res.status !== 200)
        throw new Error(`GET /v1/analytics answered ${res.status}: ${JSON.stringify(body)}`);
      return { ms, body };
    };
    for (const [interval, target] of [
      ['day', 200],
      ['month', 50],
    ]) {
      for (let i = 0; i < 3; i++) await read(interval);
      const times = [];
      let body;
      for (let i = 0; i < QUERIES; i++) ({ ms: times[i], body } = await read(interval));
      const p50 = percentile(times, 50);
      console.log(
        `GET /v1/analytics, 12 months by ${interval}: ${body.periods.length} periods, p50 ${round(p50)} ms, p95 ${round(percentile(times, 95))} ms (target p50 < ${target} ms); MRR at the end ${body.periods.at(-1).mrr}, ${body.periods.at(-1).activeSubscriptions} active`,
      );
      if (!(p50 < target)) failures.push(`12 months by ${interval}: p50 ${round(p50)} ms ≥ ${target} ms`);
    }
    // The answer must be the ledger's: MRR at the end is what the seeded subscriptions count for now.
    const [{ current }] = await sql(
      'select coalesce(sum(mrr_amount), 0)::bigint as current from subscription where app_id = ?',
      [appId],
    );
    const { body: check } = await read('month');
    if (check.periods.at(-1).mrr !== Number(current))
      failures.push(`MRR at the end ${check.periods.at(-1).mrr} ≠ the subscriptions' ${current}`);

    // 3. Plan changes, A (recording) and B (not), interleaved.
    const stripe = new Stripe('sk_test_bench', {
      host: new URL(server.payments.apiBase).hostname,
      port: Number(new URL(server.payments.apiBase).port),
      protocol: 'http',
    });
    const plans = {};
    for (const [slug, amount] of [
      ['bench-basic', 1000],
      ['bench-pro', 3000],
    ]) {
      const price = await stripe.prices.create({
        currency: 'usd',
        unit_amount: amount,
        recurring: { interval: 'month' },
        product_data: { name: slug },
      });
      await graphql(
        'mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }',
        { appId, input: { id: slug, name: slug, stripePriceId: price.id, features: {} } },
      );
      plans[slug] = price.id;
    }
    const principal = await withContext(server.deps.orm, () =>
      server.services.credentials.resolve(`Bearer ${apiKey}`),
    );
    const subscriptions = [];
    for (let i = 0; i < 4; i++) {
      const email = `bench-change-${i}@example.com`;
      const customer = await stripe.customers.create({ email });
      const res = await fetch(`${server.url}/v1/customers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ email }),
      });
      const { id: customerId } = await res.json();
      await sql('update customer set payment_customer_id = ? where id = ?', [customer.id, customerId]);
      const remote = await stripe.subscriptions.create({
        customer: customer.id,
        items: [{ price: plans['bench-basic'] }],
      });
      // Stripe's notification imports it for the linked customer.
      const deadline = Date.now() + 15_000;
      let row;
      while (!row && Date.now() < deadline) {
        [row] = await sql('select id from subscription where stripe_subscription_id = ?', [remote.id]);
        if (!row) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      if (!row) throw new Error('the subscription was not imported');
      subscriptions.push({ id: row.id, plan: 'bench-basic' });
    }
    const withRecording = server.services.subscriptionLifecycle;
    const withoutRecording = new SubscriptionLifecycleService(
      server.deps.orm,
      server.deps.clock,
      server.deps.payments,
      new SubscriptionEvents(server.services.outboundEvents, { recordMovements: false }),
    );
    const change = async (service, subscription) => {
      const planId = subscription.plan === 'bench-basic' ? 'bench-pro' : 'bench-basic';
      const t = performance.now();
      await withContext(server.deps.orm, () =>
        service.changeSubscriptionPlan(principal, subscription.id, { planId }),
      );
      subscription.plan = planId;
      return performance.now() - t;
    };
    const [{ before }] = await sql('select count(*)::int as before from mrr_movement where cause = ?', [
      'plan_change',
    ]);
    for (let i = 0; i < 6; i++) await change(i % 2 ? withRecording : withoutRecording, subscriptions[i % 4]);
    const a = [];
    const b = [];
    for (let i = 0; i < PLAN_CHANGES; i++) {
      // ABBA order, round-robin over the subscriptions: drift and warm caches fall on both sides.
      const first = i % 2 === 0 ? [withRecording, a] : [withoutRecording, b];
      const second = i % 2 === 0 ? [withoutRecording, b] : [withRecording, a];
      first[1].push(await change(first[0], subscriptions[(2 * i) % 4]));
      second[1].push(await change(second[0], subscriptions[(2 * i + 1) % 4]));
    }
    const [{ after }] = await sql('select count(*)::int as after from mrr_movement where cause = ?', [
      'plan_change',
    ]);
    const medianA = percentile(a, 50);
    const medianB = percentile(b, 50);
    // Each A beside its B: the median of the pairs' differences is what drift on a busy machine moves least.
    const pairedDifference = percentile(
      a.map((ms, i) => ms - b[i]),
      50,
    );
    const overhead = (pairedDifference / medianB) * 100;
    console.log(
      `plan change, ${PLAN_CHANGES} each, interleaved: recording p50 ${round(medianA)} ms, without p50 ${round(medianB)} ms; median paired difference ${round(pairedDifference)} ms → ${overhead.toFixed(1)} % (target < 10 %; medians alone: ${((medianA / medianB - 1) * 100).toFixed(1)} %); movements recorded ${after - before} (A's ${PLAN_CHANGES} + warm-up 3)`,
    );
    if (!(overhead < 10)) failures.push(`recording adds ${overhead.toFixed(1)} % to a plan change`);
    if (after - before !== PLAN_CHANGES + 3)
      failures.push(`expected ${PLAN_CHANGES + 3} plan-change movements, got ${after - before}`);
    // The recording alone, for scale: one movement in a transaction of its own.
    const { recordMrrChange } = await import(dist('modules/analytics/mrr-ledger.js'));
    const alone = [];
    for (let i = 0; i < PLAN_CHANGES; i++) {
      const t = performance.now();
      await server.deps.orm.em.fork().transactional((em) =>
        recordMrrChange(em, {
          appId,
          subscriptionId: `sub_bench_${1 + (i % 1000)}`,
          customerId: `cus_bench_${1 + (i % 1000)}`,
          organizationId: null,
          before: { amount: 1000 + i, currency: 'usd', status: 'active', planId: 'basic' },
          after: { amount: 1001 + i, currency: 'usd', status: 'active', planId: 'basic' },
          cause: 'repair',
        }),
      );
      alone.push(performance.now() - t);
    }
    console.log(`recording alone (a transaction with one movement): p50 ${round(percentile(alone, 50))} ms`);
    console.log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await server.close();
  }
  if (failures.length > 0) {
    console.error(`targets missed:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
});

/**
 * One app's year, set-based: SUBSCRIPTIONS customers, each with a subscription on one of three monthly
 * plans started on a day of the last twelve months ('new'); a quarter expand to twice their price 30 days
 * later, a tenth of those contract back 30 days after, a tenth churn 60 days after starting and a third
 * of those come back 20 days later. The daily totals are summed from the movements, as recording does.
 */
async function seed(sql, appId) {
  await sql(
    `insert into plan (id, app_id, slug, name, features, created_at, updated_at)
     select 'pln_bench_' || p.slug, ?, p.slug, p.slug, '{}', now(), now()
       from (values ('basic'), ('pro'), ('team')) as p(slug)`,
    [appId],
  );
  await sql(
    `insert into customer (id, app_id, email, email_lower, metadata, created_at, updated_at)
     select 'cus_bench_' || i, ?, 'bench' || i || '@example.com', 'bench' || i || '@example.com', '{}', now(), now()
       from generate_series(1, ?) as i`,
    [appId, SUBSCRIPTIONS],
  );
  // i: its number; start: the day it started; price: its plan's monthly amount.
  const base = `select i, 'cus_bench_' || i as customer_id, 'sub_bench_' || i as subscription_id,
      (array['basic', 'pro', 'team'])[1 + i % 3] as plan, (array[1000, 3000, 9900])[1 + i % 3] as price,
      date_trunc('day', now()) - (1 + (i * 7919) % 364) * interval '1 day' + (i % 86400) * interval '1 second' as start
    from generate_series(1, ${Number(SUBSCRIPTIONS)}) as i`;
  // Each subscription's movements, then its state now from them.
  await sql(
    `insert into mrr_movement (id, app_id, subscription_id, subject_id, customer_id, plan_id, currency, mrr_before,
                               mrr_after, subject_mrr_before, subject_mrr_after, kind, cause, status_before,
                               status_after, started, ended, converted, backfilled, occurred_at)
     select 'mrr_bench_' || m.i || '_' || m.n, ?, m.subscription_id, m.customer_id, m.customer_id, m.plan, 'usd',
            m.mrr_before, m.mrr_after, m.mrr_before, m.mrr_after, m.kind, m.cause, m.status_before, m.status_after,
            m.n = 1, false, false, false, m.at
       from (
         select b.*, 1 as n, 0 as mrr_before, b.price as mrr_after, 'new' as kind, 'checkout' as cause,
                null as status_before, 'active' as status_after, b.start as at from (${base}) b
         union all
         select b.*, 2, b.price, 2 * b.price, 'expansion', 'plan_change', 'active', 'active', b.start + interval '30 days'
           from (${base}) b where b.i % 4 = 0
         union all
         select b.*, 3, 2 * b.price, b.price, 'contraction', 'plan_change', 'active', 'active', b.start + interval '60 days'
           from (${base}) b where b.i % 40 = 0
         union all
         select b.*, 4, b.price, 0, 'churn', 'pause', 'active', 'paused', b.start + interval '60 days'
           from (${base}) b where b.i % 10 = 1
         union all
         select b.*, 5, 0, b.price, 'reactivation', 'resume', 'paused', 'active', b.start + interval '80 days'
           from (${base}) b where b.i % 30 = 1
       ) m
      where m.at <= now()`,
    [appId],
  );
  await sql(
    `insert into subscription (id, app_id, customer_id, plan_id, stripe_subscription_id, stripe_customer_id, status,
                               mrr_amount, mrr_currency, mrr_quantity, mrr_inputs, created_at, updated_at)
     select s.subscription_id, ?, s.customer_id, 'pln_bench_' || s.plan, 'sub_stripe_bench_' || s.i, 'cus_stripe_bench_' || s.i,
            (select m.status_after from mrr_movement m where m.subscription_id = s.subscription_id order by m.occurred_at desc limit 1),
            (select sum(m.mrr_after - m.mrr_before) from mrr_movement m where m.subscription_id = s.subscription_id),
            'usd', 1, 'seeded', s.start, now()
       from (${base}) s`,
    [appId],
  );
  await sql(
    `insert into mrr_daily (app_id, currency, day, plan_id, mrr_delta, active_delta, trialing_delta, new_mrr,
                            expansion_mrr, contraction_mrr, churned_mrr, reactivation_mrr, new_subscriptions,
                            canceled_subscriptions, trial_conversions)
     select app_id, currency, (occurred_at at time zone 'UTC')::date, plan_id, sum(mrr_after - mrr_before),
            sum((mrr_after > 0)::int - (mrr_before > 0)::int), 0,
            sum(case when kind = 'new' then mrr_after - mrr_before else 0 end),
            sum(case when kind = 'expansion' then mrr_after - mrr_before else 0 end),
            sum(case when kind = 'contraction' then mrr_before - mrr_after else 0 end),
            sum(case when kind = 'churn' then mrr_before - mrr_after else 0 end),
            sum(case when kind = 'reactivation' then mrr_after - mrr_before else 0 end),
            sum(started::int), 0, 0
       from mrr_movement where app_id = ? group by 1, 2, 3, 4`,
    [appId],
  );
  await sql('analyze mrr_movement');
  await sql('analyze mrr_daily');
  await sql('analyze subscription');
}
