import { Migration } from '@mikro-orm/migrations';
import { RECORD_MRR_MOVEMENT_IN_PLAN_ORDER } from './Migration20261126181500.js';

/** Replaces `from` by `to` in `text`, where it must occur exactly once. */
function replacedOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`not exactly once: ${from}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * The day's MRR totals split by subject (`mrr_daily.shard`, 16 per app, currency, day and plan). Every
 * MRR movement of an app's plan on a day wrote the same row and held its lock until its commit, so
 * movements of different subscriptions took turns there: under `bench/webhook-ingestion.js` the
 * recording statement spent 4.7 ms a call, most of it waiting for that row. Now a movement writes the
 * rows of its subject's shard (`hashtext(subject) & 15`), and readers sum the shards as they already sum
 * the days. The function is that of Migration20261126181500 with the shard written; the rows of a
 * transaction are still taken in the order of their plan ids.
 */
export const RECORD_MRR_MOVEMENT_BY_SHARD = [
  [
    'trialing_delta, new_mrr,',
    'trialing_delta, shard, new_mrr,',
  ],
  [
    'select m.app_id, m.currency, m.day, p.plan, p.mrr, p.active, p.trialing,',
    "select m.app_id, m.currency, m.day, p.plan, p.mrr, p.active, p.trialing, hashtext(v.j->>'subject') & 15,",
  ],
  [
    'on conflict (app_id, currency, day, plan_id) do update set',
    'on conflict (app_id, currency, day, plan_id, shard) do update set',
  ],
].reduce((text, [from, to]) => replacedOnce(text, from!, to!), RECORD_MRR_MOVEMENT_IN_PLAN_ORDER);

export class Migration20261126234136 extends Migration {
  override name = 'Migration20261126234136';

  override up(): void | Promise<void> {
    this.addSql(`alter table "mrr_daily" drop constraint "mrr_daily_pkey";`);
    this.addSql(`alter table "mrr_daily" add "shard" smallint not null default 0;`);
    this.addSql(`alter table "mrr_daily" add primary key ("app_id", "currency", "day", "plan_id", "shard");`);
    this.addSql(RECORD_MRR_MOVEMENT_BY_SHARD);
  }

  override down(): void | Promise<void> {
    this.addSql(RECORD_MRR_MOVEMENT_IN_PLAN_ORDER);
    // Back to one row per app, currency, day and plan: the shards summed.
    this.addSql(`create temporary table mrr_daily_summed as
      select app_id, currency, day, plan_id, sum(mrr_delta) as mrr_delta, sum(active_delta) as active_delta,
             sum(trialing_delta) as trialing_delta, sum(new_mrr) as new_mrr, sum(expansion_mrr) as expansion_mrr,
             sum(contraction_mrr) as contraction_mrr, sum(churned_mrr) as churned_mrr,
             sum(reactivation_mrr) as reactivation_mrr, sum(new_subscriptions) as new_subscriptions,
             sum(canceled_subscriptions) as canceled_subscriptions, sum(trial_conversions) as trial_conversions
        from mrr_daily group by app_id, currency, day, plan_id;`);
    this.addSql(`delete from mrr_daily;`);
    this.addSql(`alter table "mrr_daily" drop constraint "mrr_daily_pkey";`);
    this.addSql(`alter table "mrr_daily" drop column "shard";`);
    this.addSql(`alter table "mrr_daily" add primary key ("app_id", "currency", "day", "plan_id");`);
    this.addSql(`insert into mrr_daily (app_id, currency, day, plan_id, mrr_delta, active_delta, trialing_delta,
        new_mrr, expansion_mrr, contraction_mrr, churned_mrr, reactivation_mrr, new_subscriptions,
        canceled_subscriptions, trial_conversions)
      select * from mrr_daily_summed;`);
    this.addSql(`drop table mrr_daily_summed;`);
  }
}
