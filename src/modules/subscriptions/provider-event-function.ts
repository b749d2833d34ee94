import { recordMovementSql } from '../analytics/mrr-ledger.js';
import { MRR_MOVEMENTS_FUNCTION } from '../analytics/mrr-movements-sql.js';
import { deliveriesOfEventsSql, endpointsTakingSql, takesAnySql } from '../webhooks/outbound-events.js';
import { entitledPlanIdSql } from './entitled-plan.js';
import { ENTITLING_STATUSES_SQL } from './subscription.entity.js';
import {
  entitlementsDataSql,
  eventBodySql,
  type SubscriptionViewSql,
  subjectsSql,
  subscriptionViewChangedSql,
  subscriptionViewSql,
} from './subscription-event-sql.js';
import { SUBSCRIPTION_CHANGE_EVENT_TYPES } from './subscription-event-types.js';

/** The database function the Stripe receiver's first statement calls (see `applyNewerProviderEvent`). */
export const APPLY_PROVIDER_EVENT_FUNCTION = 'tollgate_apply_provider_event';

/** The types a subscription change records, as a PostgreSQL array literal (they hold no quote or comma). */
const SQL_EVENT_TYPES = `{${SUBSCRIPTION_CHANGE_EVENT_TYPES.join(',')}}`;

/** The entitled plan (name, features) of the subscription `v_row`'s owner, `overrideId` read as `status`/`plan`. */
function entitledOfOwner(overrideId: string, status: string, planId: string): string {
  const refs = { appId: 'v_row.app_id', overrideId, overrideStatus: status, overridePlanId: planId };
  const customer = entitledPlanIdSql('customer', { ...refs, ownerId: 'v_row.customer_id' });
  const organization = entitledPlanIdSql('organization', { ...refs, ownerId: 'v_row.organization_id' });
  return `(select jsonb_build_object('name', e.name, 'features', e.features) from plan e
            where e.id = case when v_row.organization_id is null then ${customer} else ${organization} end)`;
}

/** The subscription `v_row` as the Subscription object shows it, `plan` its plan's row. */
const before = (plan: string): SubscriptionViewSql => ({
  id: 'v_row.id',
  customerId: 'v_row.customer_id',
  organizationId: 'v_row.organization_id',
  planSlug: `${plan}.slug`,
  planName: `${plan}.name`,
  status: 'v_row.status',
  currentPeriodEnd: 'v_row.current_period_end',
  cancelAtPeriodEnd: 'v_row.cancel_at_period_end',
  trialEnd: 'v_row.trial_end',
  canceledAt: 'v_row.canceled_at',
  metadata: 'v_row.metadata',
  createdAt: 'v_row.created_at',
  updatedAt: 'v_row.updated_at',
});

/** The same subscription with the event's state, as the change leaves it. */
const after = (plan: string): SubscriptionViewSql => ({
  ...before(plan),
  status: 'p_status',
  currentPeriodEnd: 'p_period_end',
  cancelAtPeriodEnd: 'p_cancel_at_period_end',
  trialEnd: 'p_trial_end',
  canceledAt: 'p_canceled_at',
  updatedAt: 'now()',
});

const entitles = (status: string) => `(${status} in (${ENTITLING_STATUSES_SQL}))`;

/**
 * `create or replace function tollgate_apply_provider_event(…)`: records a subscription event's id and
 * applies the provider's state, in one call and one round trip, running only the statements its case
 * needs. It answers `outcome`, and `pending` for the outcome 'pending':
 *
 * - 'unknown': no row of the subscription; nothing written.
 * - 'skipped': an older event than the row's, its id recorded now (or before); or an event whose id was
 *   recorded; nothing else written.
 * - 'same_second': an event of the row's second, its id not recorded; nothing written.
 * - 'applied': a newer event, the state copied onto the row, which was still the version read, and the
 *   id recorded with it. PostgreSQL re-checks the version on the row's latest one after waiting for a
 *   concurrent writer. One that moves the MRR (`mrr_inputs`) takes the new count the caller worked out
 *   (`p_mrr`: amount, currency, quantity, discounts and two movement ids) and records its movements by
 *   the ledger's rule (`tollgate_mrr_movements`, src/modules/analytics/mrr-movements-sql.ts). For an app
 *   with an endpoint taking subscription changes, the change's outbound events are written with it,
 *   rendered here as `SubscriptionEvents` renders them (subscription-event-sql.ts), their ids the two
 *   given (`p_subscription_message` for `subscription.updated` or `.canceled`, `p_entitlements_message`
 *   for `entitlements.updated`), with a delivery per endpoint taking each; `pending` is then
 *   `{"deliveryIds": […]}`, for the caller to hand to the job queue.
 * - 'raced': such an event, but the row changed after it was read; nothing written (the caller reads it
 *   again).
 * - 'pending': a newer event that moves the MRR when the caller could not count it alone (`p_mrr` null:
 *   a discount given by id only, or no price), or the first quantity of a per-seat plan; id not recorded,
 *   nothing written. `pending` holds the row as read (and its version), its plan before and after and,
 *   for an app with endpoints whose change may alter what the owner is entitled to (whether its status
 *   entitles, or its plan, changes), the owner's entitled plan before and after, for the caller to count it
 *   from the row and make the change with its movements and outbound events
 *   (`tollgate_apply_provider_change`, provider-change-function.ts), or to make it in a transaction.
 *
 * One statement did all of this before, with every case's subqueries in its plan: PostgreSQL set up
 * some fifty of them on each call, most never run, and a duplicate cost two to four times the raw
 * receiver's statement. A function runs the statements of its branch, each a plan it keeps.
 *
 * It keeps them because of `plan_cache_mode = force_generic_plan`. Left to choose, PostgreSQL planned the
 * `pending` answer anew on most calls (over a bench run with an endpoint, 2 904 plans for 3 788 calls:
 * 601 ms of planning against 283 ms of execution): it judged a plan for the call's values cheaper than
 * the kept one. Its other statements were kept either way.
 *
 * Built from the rules it shares (`entitledPlanIdSql`, `takesAnySql`, `endpointsTakingSql`,
 * `recordMovementSql`, the event bodies of subscription-event-sql.ts); the migration that creates it
 * holds this text as it was, and test/unit/provider-event-function.test.ts fails when the two differ,
 * so a change of those rules comes with a migration that replaces the function.
 */
export function applyProviderEventFunctionSql(): string {
  return `create or replace function ${APPLY_PROVIDER_EVENT_FUNCTION}(
  p_subscription text, p_created bigint, p_event_id text, p_event_type text, p_status text, p_prices text[],
  p_mrr_inputs text, p_customer text, p_period_end timestamptz, p_cancel_at_period_end boolean,
  p_trial_end timestamptz, p_canceled_at timestamptz, p_subscription_message text, p_entitlements_message text,
  p_mrr jsonb, out outcome text, out pending json)
language plpgsql
set plan_cache_mode = force_generic_plan
as $fn$
declare
  v_row record;
  v_mrr_changes boolean;
  v_mrr jsonb;
  v_movement jsonb;
  v_wants boolean;
  v_plan text;
  v_before_plan record;
  v_after_plan record;
  v_entitled_before jsonb;
  v_entitled_after jsonb;
  v_at timestamptz;
  v_type text;
  v_ids text[] := '{}';
  v_types text[] := '{}';
  v_bodies text[] := '{}';
  v_subjects text[] := '{}';
  v_deliveries text[];
begin
  select t.*, t.xmin::text as version into v_row from subscription t where t.stripe_subscription_id = p_subscription;
  if not found then
    outcome := 'unknown';
    return;
  end if;
  outcome := 'skipped';
  if v_row.provider_event_created > p_created then
    insert into processed_event (id, type) values (p_event_id, p_event_type) on conflict (id) do nothing;
    return;
  end if;
  if exists (select 1 from processed_event e where e.id = p_event_id) then return; end if;
  if v_row.provider_event_created = p_created then
    outcome := 'same_second';
    return;
  end if;
  v_mrr_changes := v_row.mrr_inputs is distinct from p_mrr_inputs;
  v_wants := exists (select 1 from webhook_endpoint e
                      where e.app_id = v_row.app_id and e.enabled
                        and ${takesAnySql('e', `'${SQL_EVENT_TYPES}'::text[]`)});
  -- The app's plan at the event's price, unless the subscription's plan is at one of its prices.
  v_plan := coalesce(
    (select p.id from plan p
      where not coalesce((select c.stripe_price_id from plan c where c.id = v_row.plan_id) = any(p_prices), false)
        and p.app_id = v_row.app_id and p.stripe_price_id = any(p_prices)
      order by array_position(p_prices, p.stripe_price_id), p.created_at
      limit 1),
    v_row.plan_id);
  -- What the owner is entitled to before and after, read before the change, when it may alter that.
  if v_wants and (${entitles('v_row.status')} <> ${entitles('p_status')} or v_row.plan_id <> v_plan) then
    v_entitled_before := ${entitledOfOwner("''", "''", "''")};
    v_entitled_after := ${entitledOfOwner('v_row.id', 'p_status', 'v_plan')};
  end if;
  -- A change of the MRR is made here when the caller could count it alone (\`p_mrr\`), unless it is the
  -- first quantity of a per-seat plan, which needs a transaction.
  if v_mrr_changes and (p_mrr is null or (v_row.seat_quantity is null and
      coalesce((select a.seats->>'mode' = 'per_seat' from plan a where a.id = v_plan), false))) then
    outcome := 'pending';
    pending := json_build_object(
      'version', v_row.version,
      'mrr_changes', v_mrr_changes,
      'wants_events', v_wants,
      'before_row', row_to_json(v_row),
      'before_plan', (select json_build_object('id', b.slug, 'name', b.name) from plan b where b.id = v_row.plan_id),
      'after_plan', (select json_build_object('pk', a.id, 'id', a.slug, 'name', a.name) from plan a where a.id = v_plan),
      'after_per_seat', coalesce((select a.seats->>'mode' = 'per_seat' from plan a where a.id = v_plan), false),
      'entitled_before', v_entitled_before,
      'entitled_after', v_entitled_after);
    return;
  end if;
  v_mrr := case when v_mrr_changes then p_mrr end;
  update subscription s
     set status = p_status, stripe_customer_id = p_customer, current_period_end = p_period_end,
         cancel_at_period_end = p_cancel_at_period_end, trial_end = p_trial_end, canceled_at = p_canceled_at,
         provider_event_created = p_created, updated_at = now(), plan_id = v_plan,
         mrr_amount = coalesce((v_mrr->>'amount')::bigint, s.mrr_amount),
         mrr_currency = case when v_mrr is null then s.mrr_currency else v_mrr->>'currency' end,
         mrr_quantity = coalesce((v_mrr->>'quantity')::int, s.mrr_quantity),
         mrr_discounts = coalesce(v_mrr->'discounts', s.mrr_discounts),
         mrr_inputs = case when v_mrr is null then s.mrr_inputs else p_mrr_inputs end
   where s.id = v_row.id and s.xmin = v_row.version::xid;
  if not found then
    outcome := 'raced';
    return;
  end if;
  insert into processed_event (id, type) values (p_event_id, p_event_type) on conflict (id) do nothing;
  outcome := 'applied';
  if not v_wants and v_mrr is null then return; end if;
  select b.slug, b.name into v_before_plan from plan b where b.id = v_row.plan_id;
  select a.slug, a.name into v_after_plan from plan a where a.id = v_plan;
  -- Its MRR movements, in order, after the row's lock, as \`mrrMovements\` works them out (mrr-movements-sql.ts).
  if v_mrr is not null then
    for v_movement in
      select m.value from jsonb_array_elements(${MRR_MOVEMENTS_FUNCTION}(jsonb_build_object(
          'appId', v_row.app_id, 'subscriptionId', v_row.id,
          'customerId', case when v_row.organization_id is null then v_row.customer_id end,
          'organizationId', v_row.organization_id,
          'before', jsonb_build_object('amount', v_row.mrr_amount, 'currency', v_row.mrr_currency,
                                       'status', v_row.status, 'planId', v_before_plan.slug),
          'after', jsonb_build_object('amount', (v_mrr->>'amount')::bigint, 'currency', v_mrr->'currency',
                                      'status', p_status, 'planId', v_after_plan.slug),
          'cause', 'notification', 'ids', v_mrr->'ids'))) with ordinality as m(value, n)
       order by m.n
    loop
      perform ${recordMovementSql('v_movement')};
    end loop;
  end if;
  if not v_wants then return; end if;
  -- Its outbound events, as SubscriptionEvents records a change's (subscription-event-sql.ts).
  v_at := clock_timestamp();
  v_type := case
    when p_status = 'canceled' and v_row.status <> 'canceled' then 'subscription.canceled'
    when ${subscriptionViewChangedSql(before('v_before_plan'), after('v_after_plan'))} then 'subscription.updated'
  end;
  if v_type is not null then
    v_ids := array_append(v_ids, p_subscription_message);
    v_types := array_append(v_types, v_type);
    v_bodies := array_append(v_bodies, ${eventBodySql('v_type', 'v_at', subscriptionViewSql(after('v_after_plan')))});
    v_subjects := array_append(v_subjects, ${subjectsSql('v_row.customer_id', 'v_row.organization_id')});
  end if;
  if coalesce(v_entitled_before, '{"name": null, "features": {}}')
     is distinct from coalesce(v_entitled_after, '{"name": null, "features": {}}') then
    v_ids := array_append(v_ids, p_entitlements_message);
    v_types := array_append(v_types, 'entitlements.updated');
    v_bodies := array_append(v_bodies, ${eventBodySql(
      "'entitlements.updated'",
      'v_at',
      entitlementsDataSql(
        'v_row.customer_id',
        'v_row.organization_id',
        'v_entitled_after',
        'floor(extract(epoch from now()) * 1000)::bigint',
      ),
    )});
    v_subjects := array_append(v_subjects, ${subjectsSql('coalesce(v_row.organization_id, v_row.customer_id)')});
  end if;
  with events as (
    insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
    select e.id, v_row.app_id, e.type, e.body, e.subjects::jsonb, v_at
      from unnest(v_ids, v_types, v_bodies, v_subjects) as e(id, type, body, subjects)
     where exists (${endpointsTakingSql('v_row.app_id', 'e.type')})
    returning id, app_id, type, created_at
  ), deliveries as (
    ${deliveriesOfEventsSql('events')}
  )
  select coalesce(array_agg(id), '{}') into v_deliveries from deliveries;
  pending := json_build_object('deliveryIds', v_deliveries);
end
$fn$`;
}
