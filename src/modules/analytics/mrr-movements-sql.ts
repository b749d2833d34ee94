import { statusClassSql } from './mrr-rules.js';

/**
 * `mrrMovements` (mrr-ledger.ts) in SQL, for the Stripe receiver's function: it makes a notification
 * that moves the MRR in the call that reads the row, where the JavaScript rule would need a second call
 * (docs/decisions/subscription-events-in-sql.md). The two must agree: test/integration/
 * mrr-movements-sql.test.ts runs both over every combination of statuses, amounts, currencies and plans
 * it knows and compares the values, and test/unit/provider-event-function.test.ts holds the migration's
 * text equal to the one built here.
 *
 * `tollgate_mrr_movements(p_change jsonb)` takes an `MrrChange` as JSON (`appId`, `subscriptionId`,
 * `customerId`, `organizationId`, `before`, `after`, `cause`, `occurredAt`) with `ids`, the movements'
 * ids (two: a change of currency makes two movements), and answers the array of the values
 * `tollgate_record_mrr_movement` takes, as `mrrMovements` gives them.
 */
export const MRR_MOVEMENTS_FUNCTION = 'tollgate_mrr_movements';

/** One movement (the rule without its change of currency), or null when there is none. */
function movementFunctionSql(): string {
  const running = (c: string) => `(${c} in ('active', 'trialing'))`;
  return `create or replace function tollgate_mrr_movement(p_change jsonb, p_before jsonb, p_after jsonb, p_id text)
returns jsonb
language plpgsql
immutable
as $fn$
declare
  v_currency text := coalesce(p_after->>'currency', p_before->>'currency');
  v_class_before text := ${statusClassSql("p_before->>'status'")};
  v_class_after text := ${statusClassSql("p_after->>'status'")};
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
    'mayStart', not ${running('v_class_before')} and ${running('v_class_after')},
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
}

/** The movements of a change: out of the old currency and into the new one when it changed. */
function movementsFunctionSql(): string {
  return `create or replace function ${MRR_MOVEMENTS_FUNCTION}(p_change jsonb)
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
}

/** The two functions, in the order a migration creates them. */
export function mrrMovementsFunctionsSql(): [string, string] {
  return [movementFunctionSql(), movementsFunctionSql()];
}
