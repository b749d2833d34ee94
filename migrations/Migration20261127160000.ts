import { Migration } from '@mikro-orm/migrations';
import { APPLY_PROVIDER_EVENT_FUNCTION_SQL as PLANNED_PER_CALL } from './Migration20261127050000.js';

/**
 * The Stripe receiver's function (`tollgate_apply_provider_event`) with `plan_cache_mode =
 * force_generic_plan`: PostgreSQL planned its `pending` answer anew on most calls, as a plan for the
 * call's values is always estimated cheaper than the kept one, and that planning cost twice the
 * statement's execution. Otherwise the text of Migration20261127050000; src/modules/subscriptions/
 * provider-event-function.ts builds it, and test/unit/provider-event-function.test.ts holds the two equal.
 */
export const APPLY_PROVIDER_EVENT_FUNCTION_SQL = `create or replace function tollgate_apply_provider_event(
  p_subscription text, p_created bigint, p_event_id text, p_event_type text, p_status text, p_prices text[],
  p_mrr_inputs text, p_customer text, p_period_end timestamptz, p_cancel_at_period_end boolean,
  p_trial_end timestamptz, p_canceled_at timestamptz,
  out outcome text, out pending json)
language plpgsql
set plan_cache_mode = force_generic_plan
as \$fn\$
declare
  v_row record;
  v_mrr_changes boolean;
  v_wants boolean;
  v_plan text;
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
                        and (e.events = '[]'::jsonb or jsonb_exists_any(e.events, '{subscription.created,subscription.updated,subscription.canceled,entitlements.updated}'::text[])));
  -- The app's plan at the event's price, unless the subscription's plan is at one of its prices.
  v_plan := coalesce(
    (select p.id from plan p
      where not coalesce((select c.stripe_price_id from plan c where c.id = v_row.plan_id) = any(p_prices), false)
        and p.app_id = v_row.app_id and p.stripe_price_id = any(p_prices)
      order by array_position(p_prices, p.stripe_price_id), p.created_at
      limit 1),
    v_row.plan_id);
  if not v_mrr_changes and not v_wants then
    update subscription s
       set status = p_status, stripe_customer_id = p_customer, current_period_end = p_period_end,
           cancel_at_period_end = p_cancel_at_period_end, trial_end = p_trial_end, canceled_at = p_canceled_at,
           provider_event_created = p_created, updated_at = now(), plan_id = v_plan
     where s.id = v_row.id and s.xmin = v_row.version::xid;
    if not found then
      outcome := 'raced';
      return;
    end if;
    insert into processed_event (id, type) values (p_event_id, p_event_type) on conflict (id) do nothing;
    outcome := 'applied';
    return;
  end if;
  outcome := 'pending';
  pending := json_build_object(
    'version', v_row.version,
    'mrr_changes', v_mrr_changes,
    'wants_events', v_wants,
    'before_row', row_to_json(v_row),
    'before_plan', (select json_build_object('id', b.slug, 'name', b.name) from plan b where b.id = v_row.plan_id),
    'after_plan', (select json_build_object('pk', a.id, 'id', a.slug, 'name', a.name) from plan a where a.id = v_plan),
    'after_per_seat', coalesce((select a.seats->>'mode' = 'per_seat' from plan a where a.id = v_plan), false),
    'entitled_before', case when v_wants then (select json_build_object('name', e.name, 'features', e.features) from plan e
            where e.id = case when v_row.organization_id is null then coalesce(
     (select case when s.id = '' then '' else s.plan_id end
        from subscription s
       where s.app_id = v_row.app_id and s.customer_id = v_row.customer_id and s.organization_id is null
         and (case when s.id = '' then '' else s.status end) in ('trialing', 'active', 'past_due')
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = v_row.app_id and d.is_default limit 1)) else coalesce(
     (select case when s.id = '' then '' else s.plan_id end
        from subscription s
       where s.app_id = v_row.app_id and s.organization_id = v_row.organization_id
         and (case when s.id = '' then '' else s.status end) in ('trialing', 'active', 'past_due')
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = v_row.app_id and d.is_default limit 1)) end) end,
    'entitled_after', case when v_wants then (select json_build_object('name', e.name, 'features', e.features) from plan e
            where e.id = case when v_row.organization_id is null then coalesce(
     (select case when s.id = v_row.id then v_plan else s.plan_id end
        from subscription s
       where s.app_id = v_row.app_id and s.customer_id = v_row.customer_id and s.organization_id is null
         and (case when s.id = v_row.id then p_status else s.status end) in ('trialing', 'active', 'past_due')
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = v_row.app_id and d.is_default limit 1)) else coalesce(
     (select case when s.id = v_row.id then v_plan else s.plan_id end
        from subscription s
       where s.app_id = v_row.app_id and s.organization_id = v_row.organization_id
         and (case when s.id = v_row.id then p_status else s.status end) in ('trialing', 'active', 'past_due')
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = v_row.app_id and d.is_default limit 1)) end) end);
end
\$fn\$`;

export class Migration20261127160000 extends Migration {
  override name = 'Migration20261127160000';

  override up(): void | Promise<void> {
    this.addSql(APPLY_PROVIDER_EVENT_FUNCTION_SQL);
  }

  override down(): void | Promise<void> {
    this.addSql(PLANNED_PER_CALL);
  }
}
