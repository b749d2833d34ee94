import { Migration } from '@mikro-orm/migrations';
import { APPLY_PROVIDER_EVENT_FUNCTION_SQL as WITHOUT_EVENTS } from './Migration20261127160000.js';
import { APPLY_PROVIDER_EVENTS_FUNCTION_SQL as TWELVE_ARGUMENTS } from './Migration20261127200000.js';

/**
 * The Stripe receiver's first function makes a change that leaves the MRR as it was with its outbound
 * events, in the call that reads the row: for an app with endpoints, such a notification took two
 * calls before (read, then make the change with the events JavaScript rendered).
 *
 * - `tollgate_json_text(jsonb)`: a JSON value written as `JSON.stringify` writes it, for the event bodies.
 * - `tollgate_apply_provider_event` takes two more arguments, the ids of the events it may record, and
 *   renders their bodies as src/modules/subscriptions/subscription-events.ts does
 *   (src/modules/subscriptions/subscription-event-sql.ts). As its argument list changes, the function
 *   of twelve arguments is dropped once the one of fourteen is in place.
 * - `tollgate_apply_provider_events` passes them.
 *
 * src/modules/subscriptions/provider-event-function.ts and subscription-event-sql.ts build these texts,
 * and test/unit/provider-event-function.test.ts holds them equal.
 */
export const JSON_TEXT_FUNCTION_SQL = `create or replace function tollgate_json_text(p_value jsonb) returns text
language plpgsql
immutable
as $fn$
begin
  case jsonb_typeof(p_value)
    when 'object' then
      if p_value = '{}'::jsonb then return '{}'; end if;
      return '{' || (
        select string_agg(to_json(e.key)::text || ':' || tollgate_json_text(e.value), ','
                          order by (e.key ~ '^(0|[1-9][0-9]{0,9})$' and e.key::bigint <= 4294967294) desc, case when (e.key ~ '^(0|[1-9][0-9]{0,9})$' and e.key::bigint <= 4294967294) then e.key::bigint end, e.n)
          from jsonb_each(p_value) with ordinality as e(key, value, n)) || '}';
    when 'array' then
      if p_value = '[]'::jsonb then return '[]'; end if;
      return '[' || (
        select string_agg(tollgate_json_text(a.value), ',' order by a.n)
          from jsonb_array_elements(p_value) with ordinality as a(value, n)) || ']';
    when 'number' then return trim_scale(p_value::text::numeric)::text;
    else return p_value::text;
  end case;
end
$fn$`;

export const APPLY_PROVIDER_EVENT_FUNCTION_SQL = `create or replace function tollgate_apply_provider_event(
  p_subscription text, p_created bigint, p_event_id text, p_event_type text, p_status text, p_prices text[],
  p_mrr_inputs text, p_customer text, p_period_end timestamptz, p_cancel_at_period_end boolean,
  p_trial_end timestamptz, p_canceled_at timestamptz, p_subscription_message text, p_entitlements_message text,
  out outcome text, out pending json)
language plpgsql
set plan_cache_mode = force_generic_plan
as $fn$
declare
  v_row record;
  v_mrr_changes boolean;
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
                        and (e.events = '[]'::jsonb or jsonb_exists_any(e.events, '{subscription.created,subscription.updated,subscription.canceled,entitlements.updated}'::text[])));
  -- The app's plan at the event's price, unless the subscription's plan is at one of its prices.
  v_plan := coalesce(
    (select p.id from plan p
      where not coalesce((select c.stripe_price_id from plan c where c.id = v_row.plan_id) = any(p_prices), false)
        and p.app_id = v_row.app_id and p.stripe_price_id = any(p_prices)
      order by array_position(p_prices, p.stripe_price_id), p.created_at
      limit 1),
    v_row.plan_id);
  if v_mrr_changes then
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
    return;
  end if;
  -- What the owner is entitled to before and after, read before the change, when it may alter that.
  if v_wants and ((v_row.status in ('trialing', 'active', 'past_due')) <> (p_status in ('trialing', 'active', 'past_due')) or v_row.plan_id <> v_plan) then
    v_entitled_before := (select jsonb_build_object('name', e.name, 'features', e.features) from plan e
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
     (select d.id from plan d where d.app_id = v_row.app_id and d.is_default limit 1)) end);
    v_entitled_after := (select jsonb_build_object('name', e.name, 'features', e.features) from plan e
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
     (select d.id from plan d where d.app_id = v_row.app_id and d.is_default limit 1)) end);
  end if;
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
  if not v_wants then return; end if;
  -- Its outbound events, as SubscriptionEvents records a change's (subscription-event-sql.ts).
  v_at := clock_timestamp();
  select b.slug, b.name into v_before_plan from plan b where b.id = v_row.plan_id;
  select a.slug, a.name into v_after_plan from plan a where a.id = v_plan;
  v_type := case
    when p_status = 'canceled' and v_row.status <> 'canceled' then 'subscription.canceled'
    when (v_before_plan.slug, v_before_plan.name, v_row.status, coalesce(to_json(to_char(v_row.current_period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null'), v_row.cancel_at_period_end,
      coalesce(to_json(to_char(v_row.trial_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null'), coalesce(to_json(to_char(v_row.canceled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null')) is distinct from (v_after_plan.slug, v_after_plan.name, p_status, coalesce(to_json(to_char(p_period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null'), p_cancel_at_period_end,
      coalesce(to_json(to_char(p_trial_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null'), coalesce(to_json(to_char(p_canceled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null')) then 'subscription.updated'
  end;
  if v_type is not null then
    v_ids := array_append(v_ids, p_subscription_message);
    v_types := array_append(v_types, v_type);
    v_bodies := array_append(v_bodies, '{"type":' || coalesce(to_json(v_type::text)::text, 'null') || ',"timestamp":' || coalesce(to_json(to_char(v_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null') || ',"data":' || '{"id":' || coalesce(to_json(v_row.id::text)::text, 'null')
    || ',"customerId":' || coalesce(to_json(v_row.customer_id::text)::text, 'null')
    || ',"organizationId":' || coalesce(to_json(v_row.organization_id::text)::text, 'null')
    || ',"plan":{"id":' || coalesce(to_json(v_after_plan.slug::text)::text, 'null') || ',"name":' || coalesce(to_json(v_after_plan.name::text)::text, 'null') || '}'
    || ',"status":' || coalesce(to_json(p_status::text)::text, 'null')
    || ',"currentPeriodEnd":' || coalesce(to_json(to_char(p_period_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null')
    || ',"cancelAtPeriodEnd":' || case when p_cancel_at_period_end then 'true' else 'false' end
    || ',"trialEnd":' || coalesce(to_json(to_char(p_trial_end at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null')
    || ',"canceledAt":' || coalesce(to_json(to_char(p_canceled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null')
    || ',"metadata":' || tollgate_json_text(coalesce(v_row.metadata, '{}'::jsonb))
    || ',"createdAt":' || coalesce(to_json(to_char(v_row.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null')
    || ',"updatedAt":' || coalesce(to_json(to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null') || '}' || '}');
    v_subjects := array_append(v_subjects, coalesce((select '[' || string_agg(to_json(s.id)::text, ',' order by s.id collate "C") || ']'
             from (select distinct x.id from unnest(array[v_row.customer_id, v_row.organization_id]::text[]) as x(id)
                    where x.id is not null) s), '[]'));
  end if;
  if coalesce(v_entitled_before, '{"name": null, "features": {}}')
     is distinct from coalesce(v_entitled_after, '{"name": null, "features": {}}') then
    v_ids := array_append(v_ids, p_entitlements_message);
    v_types := array_append(v_types, 'entitlements.updated');
    v_bodies := array_append(v_bodies, '{"type":' || coalesce(to_json('entitlements.updated'::text)::text, 'null') || ',"timestamp":' || coalesce(to_json(to_char(v_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')::text)::text, 'null') || ',"data":' || case when v_row.organization_id is not null then '{"organizationId":' || coalesce(to_json(v_row.organization_id::text)::text, 'null')
               else '{"customerId":' || coalesce(to_json(v_row.customer_id::text)::text, 'null') end
    || ',"planName":' || coalesce(to_json(v_entitled_after->>'name'::text)::text, 'null')
    || ',"features":' || tollgate_json_text(coalesce((
         select jsonb_object_agg(f.key, case when jsonb_typeof(f.value) = 'object'
                                               and jsonb_exists(f.value, 'limit') and jsonb_exists(f.value, 'reset')
                                             then f.value->'limit' else f.value end)
           from jsonb_each(v_entitled_after->'features') as f), '{}'::jsonb))
    || ',"ev":' || floor(extract(epoch from now()) * 1000)::bigint::text || '}' || '}');
    v_subjects := array_append(v_subjects, coalesce((select '[' || string_agg(to_json(s.id)::text, ',' order by s.id collate "C") || ']'
             from (select distinct x.id from unnest(array[coalesce(v_row.organization_id, v_row.customer_id)]::text[]) as x(id)
                    where x.id is not null) s), '[]'));
  end if;
  with events as (
    insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
    select e.id, v_row.app_id, e.type, e.body, e.subjects::jsonb, v_at
      from unnest(v_ids, v_types, v_bodies, v_subjects) as e(id, type, body, subjects)
     where exists (select p.id, row_number() over (order by p.id) as n from webhook_endpoint p
           where p.app_id = v_row.app_id and p.enabled and (p.events = '[]'::jsonb or jsonb_exists_any(p.events, array[e.type])))
    returning id, app_id, type, created_at
  ), deliveries as (
    insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
    select 'whd_' || substr(ev.id, 5) || '_' || t.n, ev.id, t.id, 'pending', 0, ev.created_at, ev.created_at, ev.created_at
      from events ev cross join lateral (select p.id, row_number() over (order by p.id) as n from webhook_endpoint p
           where p.app_id = ev.app_id and p.enabled and (p.events = '[]'::jsonb or jsonb_exists_any(p.events, array[ev.type]))) t
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_deliveries from deliveries;
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
        e->>7, (e->>8)::timestamptz, (e->>9)::boolean, (e->>10)::timestamptz, (e->>11)::timestamptz, e->>12, e->>13);
    end if;
    outcome := r.outcome;
    pending := r.pending;
    return next;
  end loop;
end
$fn$`;

const TWELVE = 'text, bigint, text, text, text, text[], text, text, timestamptz, boolean, timestamptz, timestamptz';
const FOURTEEN = `${TWELVE}, text, text`;

export class Migration20261128000000 extends Migration {
  override name = 'Migration20261128000000';

  override up(): void | Promise<void> {
    this.addSql(JSON_TEXT_FUNCTION_SQL);
    this.addSql(APPLY_PROVIDER_EVENT_FUNCTION_SQL);
    this.addSql(APPLY_PROVIDER_EVENTS_FUNCTION_SQL);
    this.addSql(`drop function tollgate_apply_provider_event(${TWELVE});`);
  }

  override down(): void | Promise<void> {
    this.addSql(WITHOUT_EVENTS);
    this.addSql(TWELVE_ARGUMENTS);
    this.addSql(`drop function tollgate_apply_provider_event(${FOURTEEN});`);
    this.addSql('drop function if exists tollgate_json_text;');
  }
}
