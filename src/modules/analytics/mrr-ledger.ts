import type { EntityManager } from '@mikro-orm/core';
import { newId } from '../../core/ids.js';
import type { MovementCause } from './mrr-movement.entity.js';
import { statusClass } from './mrr-rules.js';

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
 * What `tollgate_record_mrr_movement` takes for one movement (migrations/Migration20261126181500.ts): the
 * movement and its day's totals per plan, all but what the function judges from the subject's ledger.
 */
export type MovementValues = Record<string, unknown>;

/**
 * The movements a subscription change makes: none when neither its MRR nor how it counts changed, one
 * usually, two for a change of currency (out of the old one, into the new one).
 */
export function mrrMovements(change: MrrChange): MovementValues[] {
  const { before, after } = change;
  if (before.currency !== null && after.currency !== null && before.currency !== after.currency) {
    return [
      ...mrrMovements({
        ...change,
        after: { ...after, amount: 0, currency: before.currency, status: after.status },
      }),
      // The status moved with the first: the second only brings the amount into the new currency.
      ...mrrMovements({
        ...change,
        before: { ...before, amount: 0, currency: after.currency, status: after.status },
      }),
    ];
  }
  const currency = after.currency ?? before.currency;
  if (currency === null) return [];
  const classBefore = statusClass(before.status);
  const classAfter = statusClass(after.status);
  const subjectId = change.organizationId ?? change.customerId;
  const samePlan = before.planId === after.planId || (before.amount === 0 && after.amount === 0);
  if (subjectId === null || (before.amount === after.amount && classBefore === classAfter && samePlan))
    return [];
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
  return [
    {
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
    },
  ];
}

/**
 * One movement written by the database function, which takes the locks, then (a fresh snapshot, seeing
 * every movement committed before them) reads the subject's MRR in the currency and whether it ever had
 * MRR, judges the kind, and writes the movement and its day's totals. `values` is a `jsonb` expression.
 *
 * The subject's movements are taken one at a time (a lock on the subject for the transaction), so its
 * MRR before, read from its own movements, and the kind judged on it are exact; a repair of the app
 * waits for the recordings under way, and they for it.
 */
export function recordMovementSql(values: string): string {
  return `tollgate_record_mrr_movement(${values}, ${APP_LEDGER_LOCK}, ${SUBJECT_LEDGER_LOCK})`;
}

/** Appends the movements a subscription change makes (`mrrMovements`), in the caller's transaction. */
export async function recordMrrChange(em: EntityManager, change: MrrChange): Promise<void> {
  for (const values of mrrMovements(change)) {
    await em
      .getConnection()
      .execute(
        `select ${recordMovementSql('?::jsonb')}`,
        [JSON.stringify(values)],
        'all',
        em.getTransactionContext(),
      );
  }
}
