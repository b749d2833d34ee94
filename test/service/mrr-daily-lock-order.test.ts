import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import { recordMrrChange } from '../../src/modules/analytics/mrr-ledger.js';
import { eventually } from '../helpers/eventually.js';
import { type ServiceCore, startServices } from '../helpers/services.js';

/**
 * Two subscriptions moving between the same two plans in opposite directions at the same time each
 * write both plans' rows of the day's totals. Written in the order of each move, they waited for each
 * other (a deadlock, one of them failed after a second); written in the order of the plans, the second
 * waits for the first and goes on. The interleaving is forced: a third transaction holds one row while
 * the two queue up behind it. The day's totals are split by subject (`shard`): the test's customers all
 * write the same shard, as any two subjects may.
 */

let core: ServiceCore;
const db = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });

beforeAll(async () => {
  core = await startServices();
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await core.close();
});

/** How many recordings of the app's movements wait for a lock. */
async function waiting(appId: string): Promise<number> {
  const { rows } = await db.query(
    `select count(*)::int as n from pg_stat_activity
      where wait_event_type = 'Lock' and query like 'select tollgate_record_mrr_movement(%' and strpos(query, $1) > 0`,
    [`"app":"${appId}"`],
  );
  return rows[0].n;
}

const moved = (amount: number, from: string, to: string) => ({
  before: { amount, currency: 'usd', status: 'active', planId: from },
  after: { amount, currency: 'usd', status: 'active', planId: to },
});

/** Four customer ids whose movements write the same shard of the day's totals. */
async function customersOfOneShard(): Promise<string[]> {
  const { rows } = await db.query(
    `select array_agg(id order by n) as ids from (
       select 'cus_shard_' || n as id, n, hashtext('cus_shard_' || n) & 15 as shard from generate_series(1, 200) n
     ) c group by shard having count(*) >= 4 order by shard limit 1`,
  );
  return rows[0].ids.slice(0, 4);
}

it('records opposite moves between two plans side by side, without a deadlock', async () => {
  const { principal } = await core.createApp();
  const appId = principal.appId;
  const [seedPro, seedMax, customerA, customerB] = await customersOfOneShard();
  const record = (em: EntityManager, subscription: string, customer: string, from: string, to: string) =>
    recordMrrChange(em, {
      appId,
      subscriptionId: subscription,
      customerId: customer,
      organizationId: null,
      ...moved(1000, from, to),
      cause: 'notification',
    });
  // The day's rows of both plans exist (a subscription on each).
  await core.deps.orm.em.fork().transactional(async (em) => {
    await recordMrrChange(em, {
      appId,
      subscriptionId: 'sub_seed_pro',
      customerId: seedPro!,
      organizationId: null,
      before: { amount: 0, currency: null, status: null, planId: null },
      after: { amount: 1000, currency: 'usd', status: 'active', planId: 'pro' },
      cause: 'notification',
    });
    await recordMrrChange(em, {
      appId,
      subscriptionId: 'sub_seed_max',
      customerId: seedMax!,
      organizationId: null,
      before: { amount: 0, currency: null, status: null, planId: null },
      after: { amount: 1000, currency: 'usd', status: 'active', planId: 'max' },
      cause: 'notification',
    });
  });

  const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await holder.connect();
  try {
    await holder.query('begin');
    await holder.query(`select 1 from mrr_daily where app_id = $1 and plan_id = 'pro' for update`, [appId]);
    // B moves max → pro, then A moves pro → max: each writes both rows.
    const b = core.deps.orm.em.fork().transactional((em) => record(em, 'sub_b', customerB!, 'max', 'pro'));
    await eventually(async () => ((await waiting(appId)) === 1 ? true : undefined));
    const a = core.deps.orm.em.fork().transactional((em) => record(em, 'sub_a', customerA!, 'pro', 'max'));
    await eventually(async () => ((await waiting(appId)) === 2 ? true : undefined));
    await holder.query('commit');
    await expect(Promise.all([a, b])).resolves.toEqual([undefined, undefined]);
  } finally {
    await holder.end();
  }
  const { rows } = await db.query(
    `select plan_id, sum(mrr_delta)::int as mrr from mrr_daily where app_id = $1 group by plan_id order by plan_id`,
    [appId],
  );
  expect(rows).toEqual([
    { plan_id: 'max', mrr: 1000 },
    { plan_id: 'pro', mrr: 1000 },
  ]);
});
