import { Migration } from '@mikro-orm/migrations';
import { RECORD_MRR_MOVEMENT } from './Migration20261126160000.js';

/**
 * The MRR recording function of Migration20261126160000, with its day's totals written in the order of
 * their plan ids. A move between plans writes two rows of `mrr_daily`, and it wrote them in the order of
 * the move (the plan after, then the plan before): two subscriptions moving opposite ways at the same
 * time each locked one row and waited for the other's, a deadlock PostgreSQL breaks only after a second
 * by failing one of them. Under `bench/webhook-ingestion.js`, whose events move subscriptions between two
 * plans, that held notifications for 1–2 s and failed some with 500. In one order, the second waits for
 * the first and goes on.
 *
 * Otherwise unchanged; the kind's expression is still `movementKindSql` (a test holds them to the same
 * text).
 */
export const RECORD_MRR_MOVEMENT_IN_PLAN_ORDER = `create or replace function tollgate_record_mrr_movement(p_values jsonb, p_app_lock int, p_subject_lock int)
returns void
language plpgsql as $fn$
begin
  -- The app's ledger shared (a repair takes it exclusively), the subject's exclusively.
  perform pg_advisory_xact_lock_shared(p_app_lock, hashtext(p_values->>'app')),
          pg_advisory_xact_lock(p_subject_lock, hashtext((p_values->>'app') || '/' || (p_values->>'subject')));
  with v as (select p_values as j),
       subject as (
         -- Its values as sub-selects (run once, before the scan): the subject's movements are found by index.
         select coalesce(sum(m.mrr_after - m.mrr_before), 0) as mrr,
                coalesce(bool_or(m.kind is not null), false) as counted,
                coalesce(bool_or(m.started and m.subscription_id = (select j->>'subscription' from v)), false) as started
           from mrr_movement m
          where m.app_id = (select j->>'app' from v) and m.subject_id = (select j->>'subject' from v)
            and m.currency = (select j->>'currency' from v)
       ), k as (
         select s.mrr as subject_before, s.mrr + (v.j->>'delta')::bigint as subject_after,
                (case when (s.mrr) = (s.mrr + (v.j->>'delta')::bigint) then null
                  when (s.mrr) = 0 then case when (s.counted) then 'reactivation' else 'new' end
                  when (s.mrr + (v.j->>'delta')::bigint) = 0 then 'churn'
                  when (s.mrr + (v.j->>'delta')::bigint) > (s.mrr) then 'expansion'
                  else 'contraction' end) as kind,
                (v.j->>'mayStart')::boolean and not s.started as started
           from subject s, v
       ), m as (
         insert into mrr_movement (id, app_id, subscription_id, subject_id, customer_id, organization_id, plan_id,
                                   plan_before_id, currency, mrr_before, mrr_after, subject_mrr_before,
                                   subject_mrr_after, kind, cause, status_before, status_after, started, ended,
                                   converted, backfilled, occurred_at)
         select j->>'id', j->>'app', j->>'subscription', j->>'subject', j->>'customer', j->>'organization', j->>'plan',
                j->>'planBefore', j->>'currency', (j->>'before')::bigint, (j->>'after')::bigint, k.subject_before,
                k.subject_after, k.kind, j->>'cause', j->>'statusBefore', j->>'statusAfter', k.started,
                (j->>'ended')::boolean, (j->>'converted')::boolean, (j->>'backfilled')::boolean,
                coalesce((j->>'at')::timestamptz, now())
           from v, k
         returning app_id, currency, (occurred_at at time zone 'UTC')::date as day, kind, started, ended, converted,
                   mrr_after - mrr_before as delta
       )
       insert into mrr_daily as d (app_id, currency, day, plan_id, mrr_delta, active_delta, trialing_delta, new_mrr,
                                   expansion_mrr, contraction_mrr, churned_mrr, reactivation_mrr,
                                   new_subscriptions, canceled_subscriptions, trial_conversions)
       select m.app_id, m.currency, m.day, p.plan, p.mrr, p.active, p.trialing,
              case when p.first and m.kind = 'new' then m.delta else 0 end,
              case when p.first and m.kind = 'expansion' then m.delta else 0 end,
              case when p.first and m.kind = 'contraction' then -m.delta else 0 end,
              case when p.first and m.kind = 'churn' then -m.delta else 0 end,
              case when p.first and m.kind = 'reactivation' then m.delta else 0 end,
              (p.first and m.started)::int, (p.first and m.ended)::int, (p.first and m.converted)::int
         from m, v, jsonb_to_recordset(v.j->'byPlan') as p(plan text, mrr bigint, active int, trialing int, first boolean)
        -- One order for every transaction: rows locked in it cannot wait for each other in a cycle.
        order by p.plan
       on conflict (app_id, currency, day, plan_id) do update set
         mrr_delta = d.mrr_delta + excluded.mrr_delta,
         active_delta = d.active_delta + excluded.active_delta,
         trialing_delta = d.trialing_delta + excluded.trialing_delta,
         new_mrr = d.new_mrr + excluded.new_mrr,
         expansion_mrr = d.expansion_mrr + excluded.expansion_mrr,
         contraction_mrr = d.contraction_mrr + excluded.contraction_mrr,
         churned_mrr = d.churned_mrr + excluded.churned_mrr,
         reactivation_mrr = d.reactivation_mrr + excluded.reactivation_mrr,
         new_subscriptions = d.new_subscriptions + excluded.new_subscriptions,
         canceled_subscriptions = d.canceled_subscriptions + excluded.canceled_subscriptions,
         trial_conversions = d.trial_conversions + excluded.trial_conversions;
end
$fn$;`;

export class Migration20261126181500 extends Migration {
  override name = 'Migration20261126181500';

  override up(): void | Promise<void> {
    this.addSql(RECORD_MRR_MOVEMENT_IN_PLAN_ORDER);
  }

  override down(): void | Promise<void> {
    this.addSql(RECORD_MRR_MOVEMENT);
  }
}
