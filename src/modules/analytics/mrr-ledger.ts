import type { EntityManager } from '@mikro-orm/core';
import { newId } from '../../core/ids.js';
import type { MovementCause } from './mrr-movement.entity.js';
import { movementKind, statusClass } from './mrr-rules.js';

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
  const [subject] = await run<{ mrr: string; counted: boolean; started: boolean }>(
    `select coalesce(sum(m.mrr_after - m.mrr_before), 0)::text as mrr,
            coalesce(bool_or(m.kind is not null), false) as counted,
            coalesce(bool_or(m.started and m.subscription_id = ?), false) as started
       from mrr_movement m where m.app_id = ? and m.subject_id = ? and m.currency = ?`,
    [change.subscriptionId, change.appId, subjectId, currency],
  );
  const subjectBefore = Number(subject!.mrr);
  const subjectAfter = subjectBefore + after.amount - before.amount;
  const kind = movementKind(subjectBefore, subjectAfter, subject!.counted);
  const running = (c: string) => c === 'active' || c === 'trialing';
  const started = !subject!.started && !running(classBefore) && running(classAfter);
  const ended = classAfter === 'ended' && classBefore !== 'ended';
  const converted = classBefore === 'trialing' && classAfter === 'active';
  const activeDelta = Number(after.amount > 0) - Number(before.amount > 0);
  const trialingDelta = Number(classAfter === 'trialing') - Number(classBefore === 'trialing');
  const movementId = newId('mrr');
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
    },
    ...(moved
      ? [
          {
            plan: planBefore,
            mrr: -before.amount,
            active: -Number(before.amount > 0),
            trialing: -Number(classBefore === 'trialing'),
          },
        ]
      : []),
  ];
  const amounts = {
    new: kind === 'new' ? delta : 0,
    expansion: kind === 'expansion' ? delta : 0,
    contraction: kind === 'contraction' ? -delta : 0,
    churn: kind === 'churn' ? -delta : 0,
    reactivation: kind === 'reactivation' ? delta : 0,
  };
  await run(
    `with m as (
       insert into mrr_movement (id, app_id, subscription_id, subject_id, customer_id, organization_id, plan_id,
                                 plan_before_id, currency, mrr_before, mrr_after, subject_mrr_before,
                                 subject_mrr_after, kind, cause, status_before, status_after, started, ended,
                                 converted, backfilled, occurred_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?::timestamptz, now()))
       returning app_id, currency, (occurred_at at time zone 'UTC')::date as day
     )
     insert into mrr_daily as d (app_id, currency, day, plan_id, mrr_delta, active_delta, trialing_delta, new_mrr,
                                 expansion_mrr, contraction_mrr, churned_mrr, reactivation_mrr,
                                 new_subscriptions, canceled_subscriptions, trial_conversions)
     select m.app_id, m.currency, m.day, p.plan, p.mrr, p.active, p.trialing,
            case when p.first then ?::bigint else 0 end, case when p.first then ?::bigint else 0 end,
            case when p.first then ?::bigint else 0 end, case when p.first then ?::bigint else 0 end,
            case when p.first then ?::bigint else 0 end, case when p.first then ?::int else 0 end,
            case when p.first then ?::int else 0 end, case when p.first then ?::int else 0 end
       from m, jsonb_to_recordset(?::jsonb) as p(plan text, mrr bigint, active int, trialing int, first boolean)
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
    [
      movementId,
      change.appId,
      change.subscriptionId,
      subjectId,
      change.customerId,
      change.organizationId,
      after.planId,
      before.planId,
      currency,
      before.amount,
      after.amount,
      subjectBefore,
      subjectAfter,
      kind,
      change.cause,
      before.status,
      after.status,
      started,
      ended,
      converted,
      change.cause === 'backfill' || change.cause === 'repair',
      change.occurredAt?.toISOString() ?? null,
      amounts.new,
      amounts.expansion,
      amounts.contraction,
      amounts.churn,
      amounts.reactivation,
      Number(started),
      Number(ended),
      Number(converted),
      JSON.stringify(byPlan.map((p, i) => ({ ...p, first: i === 0 }))),
    ],
  );
}
