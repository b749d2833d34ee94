import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../core/ids.js';
import type { MovementCause } from '../analytics/mrr-movement.entity.js';
import type { Metadata } from '../customers/customer.entity.js';
import type { ProviderSubscription } from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';
import { Subscription } from './subscription.entity.js';
import { ownerOf, type SubscriptionEvents } from './subscription-events.js';
import { applyProviderState } from './subscription-sync.js';

/** Whose a Stripe subscription is at Tollgate: a customer's or an organization's, in one app. */
export type SubscriptionOwner =
  | { readonly appId: string; readonly customerId: string; readonly organizationId?: undefined }
  | { readonly appId: string; readonly organizationId: string; readonly customerId?: undefined };

/** A Stripe subscription Tollgate did not import, and why (every Subscription the API shows has a plan). */
export interface SkippedSubscription {
  readonly stripeSubscriptionId: string;
  readonly reason: string;
}

/** What `importSubscription` did. */
export type ImportOutcome =
  | { readonly kind: 'created' | 'updated' | 'unchanged'; readonly subscription: Subscription }
  /** The row was there already and `existing: 'leave'` was asked: nothing was written. */
  | { readonly kind: 'existing'; readonly subscription: Subscription }
  | { readonly kind: 'skipped'; readonly skipped: SkippedSubscription };

/** Why a Stripe subscription whose price matches no plan of the app is not imported. */
export function unmatchedPrice(remote: ProviderSubscription): SkippedSubscription {
  return {
    stripeSubscriptionId: remote.id,
    reason:
      remote.priceIds.length > 0
        ? `its ${remote.priceIds.length > 1 ? 'prices' : 'price'} ${remote.priceIds.join(', ')} ${remote.priceIds.length > 1 ? 'match' : 'matches'} no plan of the app`
        : 'it has no price to find its plan by',
  };
}

export { planForPrices } from './subscription-sync.js';

/**
 * Creates or completes Tollgate's row of a Stripe subscription, in the caller's transaction: the one path
 * of the completed-checkout notification, a subscription notification about a subscription Tollgate has
 * not seen, and a reconciliation. The row is inserted with `ON CONFLICT (stripe_subscription_id) DO
 * NOTHING` and then locked, so concurrent importers of one Stripe subscription (a checkout and its
 * `customer.subscription.created` arriving together, a sync beside them) make exactly one row: the
 * first creates it, the others wait for its commit and complete it. On a row that was there already,
 * Stripe's state (as of `asOf`, Unix seconds) is applied as `existing` says.
 *
 * `plan` is the plan a new row gets (the checkout's, or the one found by price); an existing row keeps
 * its own unless Stripe's price says otherwise. A row of another owner is left alone and reported skipped.
 */
export async function importSubscription(
  em: EntityManager,
  input: {
    readonly owner: SubscriptionOwner;
    readonly plan: Plan;
    readonly remote: ProviderSubscription;
    readonly metadata: Metadata;
    readonly asOf: number;
    /** A row that was there already: `leave` it to the caller, or `apply` Stripe's state when not older. */
    readonly existing: 'leave' | 'apply';
    /**
     * For a row whose newest change is of `asOf`'s very second, which `asOf` cannot order: reads Stripe's
     * current state, under the row lock, to apply instead. Without it the given state is applied.
     */
    readonly latest?: () => Promise<ProviderSubscription | null>;
    /** The outbound events of the change (`subscription.created`/`updated`, `entitlements.updated`). */
    readonly events: SubscriptionEvents;
    /** The path of the change, as the MRR ledger names it. */
    readonly cause: MovementCause;
  },
): Promise<ImportOutcome> {
  const { owner, plan, remote, asOf } = input;
  const inserted = await em
    .createQueryBuilder(Subscription)
    .insert({
      id: newId('sub'),
      app: owner.appId,
      customer: owner.customerId ?? null,
      organization: owner.organizationId ?? null,
      plan: plan.id,
      stripeSubscriptionId: remote.id,
      stripeCustomerId: remote.customerId,
      status: 'incomplete',
      metadata: input.metadata,
    })
    .onConflict(['stripeSubscriptionId'])
    .ignore()
    .execute('run');
  const created = inserted.affectedRows === 1;
  const subscription = await em.findOneOrFail(
    Subscription,
    { stripeSubscriptionId: remote.id },
    { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
  );
  if (!created && input.existing === 'leave') return { kind: 'existing', subscription };
  // Loaded after the lock, not with it (a joined plan would be locked as well).
  await em.populate(subscription, ['plan']);
  const sameOwner =
    subscription.app.id === owner.appId &&
    (owner.customerId !== undefined
      ? subscription.customer?.id === owner.customerId
      : subscription.organization?.id === owner.organizationId);
  if (!sameOwner) {
    return {
      kind: 'skipped',
      skipped: {
        stripeSubscriptionId: remote.id,
        reason: 'Tollgate already has this subscription for another customer or organization',
      },
    };
  }
  let state = remote;
  if (!created) {
    if (asOf < subscription.providerEventCreated) return { kind: 'unchanged', subscription };
    if (asOf === subscription.providerEventCreated && input.latest) state = (await input.latest()) ?? remote;
  }
  const before = snapshot(subscription);
  // A new row is announced as created: the events see no state before it.
  const change = await input.events.begin(
    em,
    ownerOf(subscription),
    created ? null : subscription,
    input.cause,
  );
  await applyProviderState(em, subscription, state, asOf);
  await change.done(subscription);
  if (created) return { kind: 'created', subscription };
  return { kind: snapshot(subscription) === before ? 'unchanged' : 'updated', subscription };
}

/** The part of a row Stripe's state decides, to tell a repair from a no-op. */
function snapshot(subscription: Subscription): string {
  return JSON.stringify([
    subscription.status,
    subscription.plan.id,
    subscription.stripeCustomerId,
    subscription.currentPeriodEnd && new Date(subscription.currentPeriodEnd).getTime(),
    subscription.cancelAtPeriodEnd,
    subscription.trialEnd && new Date(subscription.trialEnd).getTime(),
    subscription.canceledAt && new Date(subscription.canceledAt).getTime(),
  ]);
}
