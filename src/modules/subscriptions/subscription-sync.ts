import type { EntityManager } from '@mikro-orm/core';
import { newId } from '../../core/ids.js';
import type { CountedState, MovementValues } from '../analytics/mrr-ledger.js';
import type { ProviderSubscription, ProviderSubscriptionDiscount } from '../payments/payment-provider.js';
import type { Features } from '../plans/plan.entity.js';
import { Plan } from '../plans/plan.entity.js';
import { type EntitledPlan, entitledPlanOf } from './entitled-plan.js';
import type { ProviderEventBatches } from './provider-event-batches.js';
import type { Subscription } from './subscription.entity.js';
import { countFromProvider, countSubscription, type MrrCount, mrrInputsOf } from './subscription-mrr.js';
import { statusFromProvider } from './subscription-transitions.js';

/**
 * Copies Stripe's state of a subscription onto Tollgate's row and remembers the event it came from, so
 * an older event arriving later is recognised and ignored. A price change at Stripe moves the
 * subscription to the app's plan with that price, when there is one. Needs `plan` loaded.
 */
export async function applyProviderState(
  em: EntityManager,
  subscription: Subscription,
  remote: ProviderSubscription,
  eventCreated: number,
): Promise<void> {
  subscription.status = statusFromProvider(remote);
  subscription.stripeCustomerId = remote.customerId;
  subscription.currentPeriodEnd = remote.currentPeriodEnd;
  subscription.cancelAtPeriodEnd = remote.cancelAtPeriodEnd;
  subscription.trialEnd = remote.trialEnd;
  subscription.canceledAt = remote.canceledAt;
  subscription.providerEventCreated = Math.max(subscription.providerEventCreated, eventCreated);
  // The plan's item is found by price: the plan stays while one of the items is at its price.
  const planPrice = subscription.plan.stripePriceId;
  if (remote.priceIds.length > 0 && !(planPrice && remote.priceIds.includes(planPrice))) {
    const plan = await planForPrices(em, subscription.app.id, remote.priceIds);
    if (plan) subscription.plan = plan;
  }
  // A per-seat subscription shows the quantity it was bought with until a seat job sets one (with the
  // membership version that orders later changes; see modules/organizations/seat-billing.ts).
  if (subscription.plan.seats?.mode === 'per_seat' && subscription.seatQuantity === null) {
    const item = remote.items.find((i) => i.priceId === subscription.plan.stripePriceId);
    if (item) subscription.seatQuantity = item.quantity;
  }
  countSubscription(subscription, remote);
}

/**
 * The app's plan sold at one of a subscription's item prices (the first item that is a plan's, the
 * oldest plan at that price), or null.
 */
export async function planForPrices(
  em: EntityManager,
  appId: string,
  priceIds: readonly string[],
): Promise<Plan | null> {
  if (priceIds.length === 0) return null;
  const plans = await em.find(
    Plan,
    { app: appId, stripePriceId: { $in: [...priceIds] } },
    { orderBy: { createdAt: 'asc' } },
  );
  const rank = (plan: Plan) => priceIds.indexOf(plan.stripePriceId ?? '');
  return plans.sort((a, b) => rank(a) - rank(b))[0] ?? null;
}

/** What `applyNewerProviderEvent` did with an event. */
export type ProviderEventOutcome =
  /**
   * Recorded and applied, with its outbound events for an app with endpoints: `deliveryIds` are their
   * deliveries, committed with it, for the job queue.
   */
  | { readonly kind: 'applied'; readonly deliveryIds: readonly string[] }
  /** Recorded (or recorded before: a duplicate) and rightly not applied: an older event. */
  | { readonly kind: 'skipped' }
  /** Neither recorded nor applied: Tollgate has no row of this subscription; the caller may import it. */
  | { readonly kind: 'unknown' }
  /**
   * Neither recorded nor applied: a newer event the statement would have applied, but the row changed
   * after the statement's snapshot (another event, or a concurrent delivery of this one); read it again.
   */
  | { readonly kind: 'raced' }
  /**
   * Neither recorded nor applied: a newer event that changes what the subscription's MRR or counts depend
   * on (`mrrInputsOf`) and needs more than the statement read to count (a discount whose coupon terms
   * are unknown, a per-seat plan's first quantity); the caller applies it in a transaction, which
   * records its MRR movement.
   */
  | { readonly kind: 'mrr_changes' }
  /**
   * Neither recorded nor applied: the subscription's newest event is of the same second, so `created`
   * cannot order them; the caller reads the state from the provider under the row lock instead.
   */
  | { readonly kind: 'same_second' }
  /**
   * Neither recorded nor applied: a newer event that moves the subscription's MRR and that needs the row
   * to count (a discount given by id only, or no price). The change as it would be made, read in the
   * same statement: the caller works out its MRR movements and outbound events and makes it with them in
   * one statement (`applyProviderChangeWithEvents`).
   */
  | { readonly kind: 'record_events'; readonly change: PendingProviderChange };

/** A newer provider event's change of a subscription, worked out but not made yet. */
export interface PendingProviderChange {
  /** The row as read; the change is made only if it is still this version. */
  readonly version: string;
  readonly before: SubscriptionRow;
  readonly after: SubscriptionRow;
  /** Whether the app has an endpoint taking subscription changes (else none of its events is written). */
  readonly wantsEvents: boolean;
  /**
   * What the subscription's owner is entitled to before and after the change: read when `wantsEvents` and
   * the change may alter it (`eventsOfRowChange` reads them only then), else as without a plan.
   */
  readonly entitlementsBefore: EntitledPlan;
  readonly entitlementsAfter: EntitledPlan;
  /**
   * When the event changes what the MRR depends on: how the subscription was counted, with its plan's
   * public id, and how it counts after.
   */
  readonly mrr: { readonly before: CountedState; readonly after: MrrCount } | null;
  /** The provider's state and the event, to write. */
  readonly remote: ProviderSubscription;
  readonly eventCreated: number;
}

/**
 * Records a subscription event's id and applies the provider's state in one statement and one round trip
 * (the common case of a webhook: a newer event, or a duplicate). The row is changed only if it is still
 * the version the statement read, and the id recorded with the change: of two concurrent deliveries of an
 * event, or two events of one subscription, the second finds the row changed and reads it again ('raced'),
 * then its id recorded (exactly-once by `processed_event`'s key).
 * The same rules as `applyProviderState`: an older event is recorded and ignored, a price change moves the
 * subscription to the app's plan with that price when there is one.
 *
 * For an app with webhook endpoints, the statement writes the change's outbound events with it (rendered
 * in SQL as `SubscriptionEvents` renders them; their ids are drawn here); for one that moves the MRR, its
 * new count (worked out here) and its movements. One whose count needs the row is read, not applied: see
 * 'record_events'. Notifications that arrive together share the statement (`ProviderEventBatches`).
 */
export async function applyNewerProviderEvent(
  batches: ProviderEventBatches,
  event: { readonly id: string; readonly type: string; readonly created: number },
  remote: ProviderSubscription,
  now: Date,
): Promise<ProviderEventOutcome> {
  const status = statusFromProvider(remote);
  const row = (await batches.apply([
    remote.id,
    event.created,
    event.id,
    event.type,
    status,
    [...remote.priceIds],
    mrrInputsOf(remote),
    remote.customerId,
    remote.currentPeriodEnd,
    remote.cancelAtPeriodEnd,
    remote.trialEnd,
    remote.canceledAt,
    newId('msg'),
    newId('msg'),
    countedAlone(status, remote),
  ])) as ApplyResult;
  if (row.outcome === 'pending') {
    const p = row.pending;
    let mrr: PendingProviderChange['mrr'] = null;
    if (p.mrr_changes) {
      const counted = { currency: p.before_row.mrr_currency, discounts: p.before_row.mrr_discounts };
      const known = new Set(counted.discounts.map((d) => d.id));
      const unknownTerms = remote.discounts.some((d) => d.coupon === null && !known.has(d.id));
      if (unknownTerms || (p.after_per_seat && p.before_row.seat_quantity === null))
        return { kind: 'mrr_changes' };
      mrr = {
        before: {
          amount: Number(p.before_row.mrr_amount),
          currency: p.before_row.mrr_currency,
          status: p.before_row.status,
          planId: p.before_plan.id,
        },
        after: countFromProvider(status, remote, counted),
      };
    }
    const before: SubscriptionRow = { ...p.before_row, plan: p.before_plan };
    const after: SubscriptionRow = {
      ...p.before_row,
      status,
      current_period_end: iso(remote.currentPeriodEnd),
      cancel_at_period_end: remote.cancelAtPeriodEnd,
      trial_end: iso(remote.trialEnd),
      canceled_at: iso(remote.canceledAt),
      updated_at: now.toISOString(),
      plan_id: p.after_plan.pk,
      plan: { id: p.after_plan.id, name: p.after_plan.name },
    };
    return {
      kind: 'record_events',
      change: {
        version: p.version,
        before,
        after,
        wantsEvents: p.wants_events,
        entitlementsBefore: entitledPlanOf(p.entitled_before),
        entitlementsAfter: entitledPlanOf(p.entitled_after),
        mrr,
        remote,
        eventCreated: event.created,
      },
    };
  }
  if (row.outcome === 'applied') return { kind: 'applied', deliveryIds: row.pending?.deliveryIds ?? [] };
  return { kind: row.outcome };
}

/**
 * How the subscription counts after the event, with the ids of the movements that may record it
 * (`tollgate_mrr_movements` makes two at most), when that does not depend on how it was counted before:
 * every discount comes with its coupon's terms and an item gives the currency. Else null: the statement
 * reads the row first ('pending').
 */
function countedAlone(
  status: string,
  remote: ProviderSubscription,
): (Omit<MrrCount, 'inputs'> & { ids: string[] }) | null {
  if (remote.discounts.some((d) => d.coupon === null)) return null;
  // Its inputs go as the statement's own argument.
  const { inputs: _, ...count } = countFromProvider(status, remote, { currency: null, discounts: [] });
  return count.currency === null ? null : { ...count, ids: [newId('mrr'), newId('mrr')] };
}

/** Outbound events made ready to be written (ids, types and the JSON bodies every attempt sends). */
export interface PreparedEvents {
  readonly appId: string;
  readonly ids: readonly string[];
  readonly types: readonly string[];
  readonly bodies: readonly string[];
  /** Each event's subject ids, as a JSON array. */
  readonly subjects: readonly string[];
}

/**
 * Makes a change read by `applyNewerProviderEvent` ('record_events') in one statement, outside any
 * transaction (`tollgate_apply_provider_change`, shared with other notifications' statements): the event
 * id is recorded, the row takes the provider's state (and its new MRR count), and the change's outbound
 * events with their deliveries (one per enabled endpoint of the app taking the type) and its MRR
 * movements are written, all or nothing. Nothing is done when the row is no longer the version read (a
 * concurrent change, or another delivery of the same event, got there first): `applied: false`, and the
 * caller reads it again.
 */
export async function applyProviderChangeWithEvents(
  batches: ProviderEventBatches,
  event: { readonly id: string; readonly type: string },
  change: PendingProviderChange,
  events: PreparedEvents,
  movements: readonly MovementValues[],
): Promise<{ applied: boolean; deliveryIds: string[] }> {
  const { after, remote } = change;
  const row = await batches.applyChange(remote.id, {
    subscription: after.id,
    version: change.version,
    eventId: event.id,
    eventType: event.type,
    status: after.status,
    customer: remote.customerId,
    periodEnd: remote.currentPeriodEnd,
    cancelAtPeriodEnd: remote.cancelAtPeriodEnd,
    trialEnd: remote.trialEnd,
    canceledAt: remote.canceledAt,
    created: change.eventCreated,
    at: after.updated_at,
    plan: after.plan_id,
    app: events.appId,
    mrr: change.mrr?.after ?? null,
    movements,
    events: events.ids.map((id, i) => ({
      id,
      type: events.types[i],
      body: events.bodies[i],
      subjects: events.subjects[i],
    })),
  });
  const answer = row.pending as { deliveryIds: string[] } | null;
  return { applied: row.outcome === 'applied', deliveryIds: answer?.deliveryIds ?? [] };
}

/** A subscription row as PostgreSQL's `row_to_json` gives it, with its plan's public id and name. */
export interface SubscriptionRow {
  readonly id: string;
  readonly app_id: string;
  readonly customer_id: string | null;
  readonly organization_id: string | null;
  readonly plan_id: string;
  readonly status: string;
  readonly current_period_end: string | null;
  readonly cancel_at_period_end: boolean;
  readonly trial_end: string | null;
  readonly canceled_at: string | null;
  readonly metadata: Record<string, unknown> | null;
  readonly created_at: string;
  readonly updated_at: string;
  readonly plan: { readonly id: string; readonly name: string };
}

/** What the function answers (see provider-event-function.ts): one outcome, and the change when it is pending. */
type ApplyResult =
  | { outcome: 'unknown' | 'skipped' | 'same_second' | 'raced'; pending: null }
  | { outcome: 'applied'; pending: { deliveryIds: string[] } | null }
  | { outcome: 'pending'; pending: PendingRow };

interface PendingRow {
  version: string;
  mrr_changes: boolean;
  wants_events: boolean;
  before_row: Omit<SubscriptionRow, 'plan'> & {
    mrr_amount: string | number;
    mrr_currency: string | null;
    mrr_discounts: ProviderSubscriptionDiscount[];
    seat_quantity: number | null;
  };
  before_plan: SubscriptionRow['plan'];
  after_plan: SubscriptionRow['plan'] & { pk: string };
  after_per_seat: boolean;
  entitled_before: { name: string; features: Features } | null;
  entitled_after: { name: string; features: Features } | null;
}

function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
