import { recordMovementSql } from '../analytics/mrr-ledger.js';
import { deliveriesOfEventsSql, endpointsTakingSql } from '../webhooks/outbound-events.js';

/** The database function that makes a change the receiver's first statement read (see `applyProviderChangeWithEvents`). */
export const APPLY_PROVIDER_CHANGE_FUNCTION = 'tollgate_apply_provider_change';

/**
 * `create or replace function tollgate_apply_provider_change(p_change jsonb)`: makes a change that
 * `tollgate_apply_provider_event` answered 'pending', with its outbound events and MRR movements, all or
 * nothing. `p_change` holds, by name, what `applyProviderChangeWithEvents` (subscription-sync.ts) sends: the row's id
 * and the version read, the event, the provider's state, the plan, the new MRR count (`mrr`, or null when
 * the event leaves it as it was), the movements (`tollgate_record_mrr_movement`'s values) and the events
 * (`id`, `type`, `body`, `subjects`: a JSON array as text).
 *
 * It answers `outcome` 'applied', with `pending` `{"deliveryIds": […]}` (one delivery per enabled
 * endpoint of the app taking the event's type; an event none takes is not written), or 'raced' when the
 * row is no longer the version read (another event, or another delivery of this one, got there first):
 * nothing written, and the caller reads it again. The row is locked only if it is still that version.
 *
 * A function rather than the caller's statement so that a change can go in the same call as other
 * notifications' statements (`tollgate_apply_provider_events`, `ProviderEventBatches`). Since
 * Migration20261128000000 only a change of the MRR whose count needs the row (a discount named by id
 * only) comes here; the first function makes the others itself. Built from the rules it shares (`recordMovementSql`,
 * `endpointsTakingSql`, `deliveriesOfEventsSql`); the migration that creates it holds this text, and
 * test/unit/provider-event-function.test.ts fails when the two differ.
 */
export function applyProviderChangeFunctionSql(): string {
  return `create or replace function ${APPLY_PROVIDER_CHANGE_FUNCTION}(p_change jsonb, out outcome text, out pending json)
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
    select ${recordMovementSql('m.j')} from applied, jsonb_array_elements(p_change->'movements') with ordinality as m(j, n)
     order by m.n
  ), events as (
    insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
    select e.j->>'id', v.app_id, e.j->>'type', e.j->>'body', (e.j->>'subjects')::jsonb, v.at
      from v, jsonb_array_elements(p_change->'events') as e(j)
     where exists (select 1 from applied)
       and exists (${endpointsTakingSql('v.app_id', "e.j->>'type'")})
    returning id, app_id, type, created_at
  ), deliveries as (
    ${deliveriesOfEventsSql('events')}
  )
  -- The movements are counted so that they are recorded: a CTE that is not read is not run.
  select exists (select 1 from applied), coalesce((select array_agg(id) from deliveries), '{}'),
         (select count(*) from movements)
    into v_applied, v_deliveries, v_movements;
  outcome := case when v_applied then 'applied' else 'raced' end;
  pending := json_build_object('deliveryIds', v_deliveries);
end
$fn$`;
}
