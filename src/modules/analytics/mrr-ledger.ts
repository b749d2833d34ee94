import type { EntityManager } from '@mikro-orm/core';
import { newId } from '../../core/ids.js';
import type { MovementCause } from './mrr-movement.entity.js';
import { movementKindSql, statusClass } from './mrr-rules.js';

/** How a subscription counted, before or after a change. */
export interface CountedState {
  /** Its MRR (0 while it does not count). */
  readonly amount: number;
  /** Null for a subscription never counted (no price known yet). */
  readonly currency: string | null;
  /** Null before the subscription existed. */
  readonly status: string | null;
  /** The plan's public id. */
  readonly planId: string | null;
}

/** A change of one subscription, to record in the ledger. */
export interface MrrChange {
  readonly appId: string;
  readonly subscriptionId: string;
  readonly customerId: string | null;
  readonly organizationId: string | null;
  readonly before: CountedState;
  readonly after: CountedState & { readonly planId: string };
  readonly cause: MovementCause;
  /** For a back-filled movement: when it happened (else now, the transaction's time). */
  readonly occurredAt?: Date;
}

/** Advisory lock classes: the app's ledger (shared by live recording, exclusive for a repair) and a subject's. */
export const APP_LEDGER_LOCK = 35_001;
const SUBJECT_LEDGER_LOCK = 35_002;

/**
 * Appends the movement a subscription change makes, in the caller's transaction, and adds it to its
 * day's totals. Nothing is written when neither its MRR nor how it counts changed. A change of currency
 * is two movements: out of the old one, into the new one.
 *
 * The subject's movements are taken one at a time (a lock on the subject for the transaction), so its
 * MRR before, read from its own movements, and the kind judged on it are exact; a repair of the app
 * waits for the recordings under way, and they for it.
 */
export async function recordMrrChange(em: EntityManager, change: MrrChange): Promise<void> {
  const { before, after } = change;
  if (before.currency !== null && after.currency !== null && before.currency !== after.currency) {
    await recordMrrChange(em, {
      ...change,
      after: { ...after, amount: 0, currency: before.currency, status: after.status },
    });
    // The status moved with the first: the second only brings the amount into the new currency.
    await recordMrrChange(em, {
      ...change,
      before: { ...before, amount: 0, currency: after.currency, status: after.status },
    });
    return;
  }
  const currency = after.currency ?? before.currency;
  if (currency === null) return;
  const classBefore = statusClass(before.status);
  const classAfter = statusClass(after.status);
  const subjectId = change.organizationId ?? change.customerId;
  const samePlan = before.planId === after.planId || (before.amount === 0 && after.amount === 0);
  if (subjectId === null || (before.amount === after.amount && classBefore === classAfter && samePlan))
    return;
  const run = <T>(sql: string, params: unknown[]) =>
    em.getConnection().execute<T[]>(sql, params, 'all', em.getTransactionContext());
  await run('select pg_advisory_xact_lock_shared(?, hashtext(?)), pg_advisory_xact_lock(?, hashtext(?))', [
    APP_LEDGER_LOCK,
    change.appId,
    SUBJECT_LEDGER_LOCK,
    `${change.appId}/${subjectId}`,
  ]);
  const running = (c: string) => c === 'active' || c === 'trialing';
  const ended = classAfter === 'ended' && classBefore !== 'ended';
  const converted = classBefore === 'trialing' && classAfter === 'active';
  const activeDelta = Number(after.amount > 0) - Number(before.amount > 0);
  const trialingDelta = Number(classAfter === 'trialing') - Number(classBefore === 'trialing');
  const planBefore = before.planId ?? after.planId;
  const delta = after.amount - before.amount;
  // The day's totals: all of the movement on its plan after, except that a move between plans takes
  // what the subscription counted for away from the plan before.
  const moved = planBefore !== after.planId;
  const byPlan = [
    {
      plan: after.planId,
      mrr: moved ? after.amount : delta,
      active: moved ? Number(after.amount > 0) : activeDelta,
      trialing: moved ? Number(classAfter === 'trialing') : trialingDelta,
      first: true,
    },
    ...(moved
      ? [
          {
            plan: planBefore,
            mrr: -before.amount,
            active: -Number(before.amount > 0),
            trialing: -Number(classBefore === 'trialing'),
            first: false,
          },
        ]
      : []),
  ];
  const values = {
    id: newId('mrr'),
    app: change.appId,
    subscription: change.subscriptionId,
    subject: subjectId,
    customer: change.customerId,
    organization: change.organizationId,
    plan: after.planId,
    planBefore: before.planId,
    currency,
    before: before.amount,
    after: after.amount,
    delta,
    cause: change.cause,
    statusBefore: before.status,
    statusAfter: after.status,
    mayStart: !running(classBefore) && running(classAfter),
    ended,
    converted,
    backfilled: change.cause === 'backfill' || change.cause === 'repair',
    at: change.occurredAt?.toISOString() ?? null,
    byPlan,
  };
  // Read after the lock (a statement of its own: its snapshot sees every movement committed before),
  // the subject's MRR in the currency and whether it ever had MRR judge the kind; the movement and its
  // day's totals are written in the same statement.
  await run(
    `with v as (select ?::jsonb as j),
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
              ${movementKindSql('s.mrr', "s.mrr + (v.j->>'delta')::bigint", 's.counted')} as kind,
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
       trial_conversions = d.trial_conversions + excluded.trial_conversions`,
    [JSON.stringify(values)],
  );
}
