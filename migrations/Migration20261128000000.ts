import { Migration } from '@mikro-orm/migrations';
import { APPLY_PROVIDER_EVENT_FUNCTION_SQL as WITHOUT_EVENTS } from './Migration20261127160000.js';
import { APPLY_PROVIDER_EVENTS_FUNCTION_SQL as TWELVE_ARGUMENTS } from './Migration20261127200000.js';

/**
 * The Stripe receiver's first function makes a newer event's change with its outbound events and, for one
 * that moves the MRR, its MRR count and movements, in the call that reads the row: for an app with
 * endpoints, or for a change of the MRR, such a notification took two calls before (read, then make the
 * change with what JavaScript worked out).
 *
 * - `tollgate_json_text(jsonb)`: a JSON value written as `JSON.stringify` writes it, for the event bodies.
 * - `tollgate_mrr_movement` and `tollgate_mrr_movements(jsonb)`: the ledger's rule of a change's movements
 *   (`mrrMovements`), in SQL.
 * - `tollgate_apply_provider_event` takes three more arguments: the ids of the events it may record, and
 *   the new MRR count the caller worked out (or null). It renders the events as
 *   src/modules/subscriptions/subscription-events.ts does (src/modules/subscriptions/subscription-event-sql.ts).
 *   As its argument list changes, the function of twelve arguments is dropped once the new one is in
 *   place.
 * - `tollgate_apply_provider_events` passes them.
 *
 * src/modules/subscriptions/provider-event-function.ts, subscription-event-sql.ts and
 * src/modules/analytics/mrr-movements-sql.ts build these texts, and test/unit/provider-event-function.test.ts
 * holds them equal.
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

export const MRR_MOVEMENT_FUNCTION_SQL = `create or replace function tollgate_mrr_movement(p_change jsonb, p_before jsonb, p_after jsonb, p_id text)
returns jsonb
language plpgsql
immutable
as $fn$
declare
  v_currency text := coalesce(p_after->>'currency', p_before->>'currency');
  v_class_before text := (case when (p_before->>'status') is null then 'none'
                when (p_before->>'status') in ('active', 'past_due') then 'active'
                when (p_before->>'status') in ('canceled', 'incomplete_expired') then 'ended'
                when (p_before->>'status') = 'trialing' then 'trialing'
                else 'none' end);
  v_class_after text := (case when (p_after->>'status') is null then 'none'
                when (p_after->>'status') in ('active', 'past_due') then 'active'
                when (p_after->>'status') in ('canceled', 'incomplete_expired') then 'ended'
                when (p_after->>'status') = 'trialing' then 'trialing'
                else 'none' end);
  v_subject text := coalesce(p_change->>'organizationId', p_change->>'customerId');
  v_before bigint := (p_before->>'amount')::bigint;
  v_after bigint := (p_after->>'amount')::bigint;
  v_plan_before text := coalesce(p_before->>'planId', p_after->>'planId');
  v_moved boolean;
begin
  if v_currency is null then return null; end if;
  if v_subject is null or (v_before = v_after and v_class_before = v_class_after
      and (p_before->>'planId' is not distinct from p_after->>'planId' or (v_before = 0 and v_after = 0))) then
    return null;
  end if;
  v_moved := v_plan_before is distinct from p_after->>'planId';
  return jsonb_build_object(
    'id', p_id, 'app', p_change->'appId', 'subscription', p_change->'subscriptionId', 'subject', v_subject,
    'customer', p_change->'customerId', 'organization', p_change->'organizationId',
    'plan', p_after->'planId', 'planBefore', p_before->'planId', 'currency', v_currency,
    'before', v_before, 'after', v_after, 'delta', v_after - v_before, 'cause', p_change->'cause',
    'statusBefore', p_before->'status', 'statusAfter', p_after->'status',
    'mayStart', not (v_class_before in ('active', 'trialing')) and (v_class_after in ('active', 'trialing')),
    'ended', v_class_after = 'ended' and v_class_before <> 'ended',
    'converted', v_class_before = 'trialing' and v_class_after = 'active',
    'backfilled', p_change->>'cause' in ('backfill', 'repair'),
    'at', coalesce(p_change->'occurredAt', 'null'::jsonb),
    'byPlan', case when v_moved then jsonb_build_array(
        jsonb_build_object('plan', p_after->'planId', 'mrr', v_after, 'active', (v_after > 0)::int,
                           'trialing', (v_class_after = 'trialing')::int, 'first', true),
        jsonb_build_object('plan', v_plan_before, 'mrr', -v_before, 'active', -(v_before > 0)::int,
                           'trialing', -(v_class_before = 'trialing')::int, 'first', false))
      else jsonb_build_array(
        jsonb_build_object('plan', p_after->'planId', 'mrr', v_after - v_before,
                           'active', (v_after > 0)::int - (v_before > 0)::int,
                           'trialing', (v_class_after = 'trialing')::int - (v_class_before = 'trialing')::int,
                           'first', true)) end);
end
$fn$`;

export const MRR_MOVEMENTS_FUNCTION_SQL = `create or replace function tollgate_mrr_movements(p_change jsonb)
returns jsonb
language plpgsql
immutable
as $fn$
declare
  v_before jsonb := p_change->'before';
  v_after jsonb := p_change->'after';
  v_one jsonb;
begin
  if v_before->>'currency' is not null and v_after->>'currency' is not null
     and v_before->>'currency' <> v_after->>'currency' then
    return (select coalesce(jsonb_agg(m.value order by m.n) filter (where m.value is not null), '[]')
              from (values
                (1, tollgate_mrr_movement(p_change, v_before,
                      v_after || jsonb_build_object('amount', 0, 'currency', v_before->'currency'),
                      p_change->'ids'->>0)),
                (2, tollgate_mrr_movement(p_change,
                      v_before || jsonb_build_object('amount', 0, 'currency', v_after->'currency',
                                                     'status', v_after->'status'),
                      v_after, p_change->'ids'->>1))) as m(n, value));
  end if;
  v_one := tollgate_mrr_movement(p_change, v_before, v_after, p_change->'ids'->>0);
  return case when v_one is null then '[]'::jsonb else jsonb_build_array(v_one) end;
end
$fn$`;

export const APPLY_PROVIDER_EVENT_FUNCTION_SQL = `create or replace function tollgate_apply_provider_event(
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
                        and (e.events = '[]'::jsonb or jsonb_exists_any(e.events, '{subscription.created,subscription.updated,subscription.canceled,entitlements.updated}'::text[])));
  -- The app's plan at the event's price, unless the subscription's plan is at one of its prices.
  v_plan := coalesce(
    (select p.id from plan p
      where not coalesce((select c.stripe_price_id from plan c where c.id = v_row.plan_id) = any(p_prices), false)
        and p.app_id = v_row.app_id and p.stripe_price_id = any(p_prices)
      order by array_position(p_prices, p.stripe_price_id), p.created_at
      limit 1),
    v_row.plan_id);
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
      select m.value from jsonb_array_elements(tollgate_mrr_movements(jsonb_build_object(
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
      perform tollgate_record_mrr_movement(v_movement, 35001, 35002);
    end loop;
  end if;
  if not v_wants then return; end if;
  -- Its outbound events, as SubscriptionEvents records a change's (subscription-event-sql.ts).
  v_at := clock_timestamp();
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
        e->>7, (e->>8)::timestamptz, (e->>9)::boolean, (e->>10)::timestamptz, (e->>11)::timestamptz, e->>12, e->>13,
        nullif(e->14, 'null'));
    end if;
    outcome := r.outcome;
    pending := r.pending;
    return next;
  end loop;
end
$fn$`;

const TWELVE = 'text, bigint, text, text, text, text[], text, text, timestamptz, boolean, timestamptz, timestamptz';
const FIFTEEN = `${TWELVE}, text, text, jsonb`;

export class Migration20261128000000 extends Migration {
  override name = 'Migration20261128000000';

  override up(): void | Promise<void> {
    this.addSql(JSON_TEXT_FUNCTION_SQL);
    this.addSql(MRR_MOVEMENT_FUNCTION_SQL);
    this.addSql(MRR_MOVEMENTS_FUNCTION_SQL);
    this.addSql(APPLY_PROVIDER_EVENT_FUNCTION_SQL);
    this.addSql(APPLY_PROVIDER_EVENTS_FUNCTION_SQL);
    this.addSql(`drop function tollgate_apply_provider_event(${TWELVE});`);
  }

  override down(): void | Promise<void> {
    this.addSql(WITHOUT_EVENTS);
    this.addSql(TWELVE_ARGUMENTS);
    this.addSql(`drop function tollgate_apply_provider_event(${FIFTEEN});`);
    this.addSql('drop function if exists tollgate_json_text;');
    this.addSql('drop function if exists tollgate_mrr_movements;');
    this.addSql('drop function if exists tollgate_mrr_movement;');
  }
}
