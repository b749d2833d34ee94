import { Migration } from "@mikro-orm/migrations";
import { APPLY_PROVIDER_EVENTS_FUNCTION_SQL as EVENTS_ONLY } from "./Migration20261127170000.js";

/**
 * The Stripe receiver’s second statement joins its first in one call.
 *
 * - `tollgate_apply_provider_change(p_change jsonb)`: makes a change `tollgate_apply_provider_event`
 *   answered 'pending' (with its outbound events and MRR movements), as the receiver's own statement
 *   did before. src/modules/subscriptions/provider-change-function.ts builds this text, and
 *   test/unit/provider-event-function.test.ts holds the two equal.
 * - `tollgate_apply_provider_events` takes such changes among its elements (an object, where a first
 *   statement is an array) and answers each its outcome, so notifications that arrive together share one
 *   call whichever of their statements they are at (src/modules/subscriptions/provider-event-batches.ts).
 */
export const APPLY_PROVIDER_CHANGE_FUNCTION_SQL = `create or replace function tollgate_apply_provider_change(p_change jsonb, out outcome text, out pending json)
language plpgsql
set plan_cache_mode = force_generic_plan
as $fn$
declare
  v_applied boolean;
  v_deliveries text[];
  v_movements bigint;
begin
  with v as (
    select p_change->>'subscription' as subscription_id, p_change->>'version' as version,
           p_change->>'eventId' as event_id, p_change->>'eventType' as event_type, p_change->>'status' as status,
           p_change->>'customer' as stripe_customer_id, (p_change->>'periodEnd')::timestamptz as current_period_end,
           (p_change->>'cancelAtPeriodEnd')::boolean as cancel_at_period_end,
           (p_change->>'trialEnd')::timestamptz as trial_end, (p_change->>'canceledAt')::timestamptz as canceled_at,
           (p_change->>'created')::bigint as created, (p_change->>'at')::timestamptz as at,
           p_change->>'plan' as plan_id, p_change->>'app' as app_id, nullif(p_change->'mrr', 'null') as mrr
  ), target as (
    select t.id from subscription t, v
     where t.id = v.subscription_id and t.xmin = v.version::xid
       for no key update of t
  ), recorded as (
    insert into processed_event (id, type)
    select v.event_id, v.event_type from v where exists (select 1 from target)
    on conflict (id) do nothing
    returning id
  ), applied as (
    update subscription s
       set status = v.status, stripe_customer_id = v.stripe_customer_id, current_period_end = v.current_period_end,
           cancel_at_period_end = v.cancel_at_period_end, trial_end = v.trial_end, canceled_at = v.canceled_at,
           provider_event_created = v.created, updated_at = v.at, plan_id = v.plan_id,
           mrr_amount = coalesce((v.mrr->>'amount')::bigint, s.mrr_amount),
           mrr_currency = case when v.mrr is null then s.mrr_currency else v.mrr->>'currency' end,
           mrr_quantity = coalesce((v.mrr->>'quantity')::int, s.mrr_quantity),
           mrr_discounts = coalesce(v.mrr->'discounts', s.mrr_discounts),
           mrr_inputs = coalesce(v.mrr->>'inputs', s.mrr_inputs)
      from target, v
     where s.id = target.id and exists (select 1 from recorded)
    returning s.id
  ), movements as (
    -- Taken in order, each after the row's lock, as a transaction's change records them.
    select tollgate_record_mrr_movement(m.j, 35001, 35002) from applied, jsonb_array_elements(p_change->'movements') with ordinality as m(j, n)
     order by m.n
  ), events as (
    insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
    select e.j->>'id', v.app_id, e.j->>'type', e.j->>'body', (e.j->>'subjects')::jsonb, v.at
      from v, jsonb_array_elements(p_change->'events') as e(j)
     where exists (select 1 from applied)
       and exists (select p.id, row_number() over (order by p.id) as n from webhook_endpoint p
           where p.app_id = v.app_id and p.enabled and (p.events = '[]'::jsonb or jsonb_exists_any(p.events, array[e.j->>'type'])))
    returning id, app_id, type, created_at
  ), deliveries as (
    insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
    select 'whd_' || substr(ev.id, 5) || '_' || t.n, ev.id, t.id, 'pending', 0, ev.created_at, ev.created_at, ev.created_at
      from events ev cross join lateral (select p.id, row_number() over (order by p.id) as n from webhook_endpoint p
           where p.app_id = ev.app_id and p.enabled and (p.events = '[]'::jsonb or jsonb_exists_any(p.events, array[ev.type]))) t
    returning id
  )
  -- The movements are counted so that they are recorded: a CTE that is not read is not run.
  select exists (select 1 from applied), coalesce((select array_agg(id) from deliveries), '{}'),
         (select count(*) from movements)
    into v_applied, v_deliveries, v_movements;
  outcome := case when v_applied then 'applied' else 'raced' end;
  pending := json_build_object('deliveryIds', v_deliveries);
end
$fn$`;

export const APPLY_PROVIDER_EVENTS_FUNCTION_SQL = `create or replace function tollgate_apply_provider_events(p_events jsonb)
returns table (n int, outcome text, pending json)
language plpgsql
set plan_cache_mode = force_generic_plan
set lock_timeout = '50ms'
as $fn$
declare
  e jsonb;
  r record;
begin
  n := 0;
  for e in select value from jsonb_array_elements(p_events) loop
    n := n + 1;
    if jsonb_typeof(e) = 'object' then
      select * into r from tollgate_apply_provider_change(e);
    else
      select * into r from tollgate_apply_provider_event(
        e->>0, (e->>1)::bigint, e->>2, e->>3, e->>4, array(select jsonb_array_elements_text(e->5)), e->>6,
        e->>7, (e->>8)::timestamptz, (e->>9)::boolean, (e->>10)::timestamptz, (e->>11)::timestamptz);
    end if;
    outcome := r.outcome;
    pending := r.pending;
    return next;
  end loop;
end
$fn$`;

export class Migration20261127200000 extends Migration {
  override name = "Migration20261127200000";

  override up(): void | Promise<void> {
    this.addSql(APPLY_PROVIDER_CHANGE_FUNCTION_SQL);
    this.addSql(APPLY_PROVIDER_EVENTS_FUNCTION_SQL);
  }

  override down(): void | Promise<void> {
    this.addSql(EVENTS_ONLY);
    this.addSql("drop function if exists tollgate_apply_provider_change;");
  }
}
