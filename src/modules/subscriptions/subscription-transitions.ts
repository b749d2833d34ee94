import type { SubscriptionStatus } from '../payments/payment-provider.js';

/** What a caller can ask of a subscription (`cancel` with `atPeriodEnd: true` is `cancel_at_period_end`). */
export type LifecycleAction = 'cancel' | 'cancel_at_period_end' | 'pause' | 'resume';

/** The part of a subscription's state that decides which actions apply. */
export interface LifecycleState {
  readonly status: SubscriptionStatus;
  readonly cancelAtPeriodEnd: boolean;
}

/** Statuses in which the subscription is still running and billed (or in its trial). */
const RUNNING: readonly SubscriptionStatus[] = ['trialing', 'active', 'past_due'];
/** Statuses after which nothing can happen to the subscription any more. */
const ENDED: readonly SubscriptionStatus[] = ['canceled', 'incomplete_expired'];

/** Whether a subscription in `status` has ended: it no longer runs nor bills, and nothing can change it. */
export function hasEnded(status: SubscriptionStatus): boolean {
  return ENDED.includes(status);
}

/**
 * Tollgate's transition table, as a pure rule: null when `action` applies to `state`, else the reason
 * it does not (reported as 409).
 *
 * - cancel: any subscription that has not ended → `canceled` at once.
 * - cancel at period end: a running or paused subscription not already scheduled → keeps its status,
 *   `cancelAtPeriodEnd: true`.
 * - pause: a running subscription → `paused` (collection paused at Stripe).
 * - resume: a paused subscription, or one scheduled to cancel at period end → back to running, with
 *   any scheduled cancellation withdrawn.
 */
export function transitionProblem(action: LifecycleAction, state: LifecycleState): string | null {
  const { status, cancelAtPeriodEnd } = state;
  if (hasEnded(status)) return `The subscription is ${status}: it can no longer be changed`;
  switch (action) {
    case 'cancel':
      return null;
    case 'cancel_at_period_end':
      if (cancelAtPeriodEnd)
        return 'The subscription is already scheduled to cancel at the end of its period';
      return RUNNING.includes(status) || status === 'paused'
        ? null
        : `A subscription that is ${status} cannot be scheduled to cancel at period end`;
    case 'pause':
      if (status === 'paused') return 'The subscription is already paused';
      return RUNNING.includes(status) ? null : `A subscription that is ${status} cannot be paused`;
    case 'resume':
      if (status === 'paused') return null;
      if (RUNNING.includes(status) && cancelAtPeriodEnd) return null;
      return `A subscription that is ${status} and not scheduled to cancel cannot be resumed`;
  }
}

/** Stripe keeps `status: active` while collection is paused; Tollgate reports such a subscription as `paused`. */
export function statusFromProvider(provider: {
  readonly status: SubscriptionStatus;
  readonly collectionPaused: boolean;
}): SubscriptionStatus {
  return RUNNING.includes(provider.status) && provider.collectionPaused ? 'paused' : provider.status;
}
