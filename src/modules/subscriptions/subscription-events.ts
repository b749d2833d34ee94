import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  type CountedState,
  type MovementValues,
  mrrMovements,
  recordMrrChange,
} from '../analytics/mrr-ledger.js';
import type { MovementCause } from '../analytics/mrr-movement.entity.js';
import { loadEntitlementsVersion } from '../entitlements/entitlements-version.js';
import { entitlementFeatures } from '../plans/metered-feature.js';
import type { OutboundEvents, PlannedEvent } from '../webhooks/outbound-events.js';
import type { BillingContext } from './billing-context.js';
import { type EntitledPlan, loadEntitledPlan } from './entitled-plan.js';
import type { ProviderEventBatches } from './provider-event-batches.js';
import { ENTITLING_STATUSES, type Subscription } from './subscription.entity.js';
import {
  presentSubscription,
  presentSubscriptionRow,
  type SubscriptionView,
} from './subscription.presenter.js';
import { SUBSCRIPTION_CHANGE_EVENT_TYPES } from './subscription-event-types.js';
import { countedStateOf } from './subscription-mrr.js';
import {
  applyProviderChangeWithEvents,
  type PendingProviderChange,
  type SubscriptionRow,
} from './subscription-sync.js';

/** A change under way; `done` records its events once the subscription holds its new state. */
export interface SubscriptionChange {
  done(after: Subscription): Promise<void>;
}

const NOTHING_TO_RECORD: SubscriptionChange = { done: async () => undefined };

const ENTITLING: ReadonlySet<string> = new Set(ENTITLING_STATUSES);
const entitles = (status: string) => ENTITLING.has(status);

/** Whose entitlements a subscription decides. */
export function ownerOf(subscription: Subscription): BillingContext {
  return subscription.organization
    ? { appId: subscription.app.id, organizationId: subscription.organization.id }
    : { appId: subscription.app.id, customerId: subscription.customer!.id };
}

/**
 * The one place where subscription changes become outbound events and MRR movements, used by every path
 * that writes a subscription's state (checkout completion, provider notifications, plan changes,
 * cancel/pause/resume, reconciliation), inside the transaction of the change: `begin` before it, `done`
 * after it; or, on the Stripe receiver's hot path, in the one statement that makes the change
 * (`applyProviderChange`), its MRR movements worked out by the same rules (`mrrMovements`). The one
 * exception: the receiver's first statement makes most notifications' changes itself, with these rules
 * written again in SQL (subscription-event-sql.ts, mrr-movements-sql.ts), which tests hold equal to
 * these (docs/decisions/subscription-events-in-sql.md).
 *
 * - `subscription.created` for a new subscription; `subscription.canceled` when it becomes canceled;
 *   otherwise `subscription.updated` when anything the API shows changed. `data` is the Subscription
 *   object as the REST API shows it.
 * - `entitlements.updated` when the change alters what its owner (customer or organization) is
 *   entitled to, compared before and after the change.
 *
 * When the app has no endpoint taking these types, nothing is read or written beyond that one check.
 */
export class SubscriptionEvents {
  constructor(
    private readonly events: OutboundEvents,
    /** Off only to measure what recording costs (bench/analytics.js); every running Tollgate records. */
    private readonly options: { readonly recordMovements?: boolean } = {},
  ) {}

  /**
   * Call before changing `before` (null: a subscription about to be created for `owner`); `cause` names
   * the path of the change in the MRR ledger, whose movement `done` appends in the same transaction.
   */
  async begin(
    em: EntityManager,
    owner: BillingContext,
    before: Subscription | null,
    cause: MovementCause,
  ): Promise<SubscriptionChange> {
    const counted: CountedState = before
      ? countedStateOf(before)
      : { amount: 0, currency: null, status: null, planId: null };
    const events = await this.#beginEvents(em, owner, before);
    return {
      done: async (after) => {
        await events.done(after);
        if (this.options.recordMovements === false) return;
        await recordMrrChange(em, {
          appId: owner.appId,
          subscriptionId: after.id,
          customerId: owner.customerId ?? null,
          organizationId: owner.organizationId ?? null,
          before: counted,
          after: countedStateOf(after),
          cause,
        });
      },
    };
  }

  async #beginEvents(
    em: EntityManager,
    owner: BillingContext,
    before: Subscription | null,
  ): Promise<SubscriptionChange> {
    if (!(await this.events.wants(em, owner.appId, SUBSCRIPTION_CHANGE_EVENT_TYPES)))
      return NOTHING_TO_RECORD;
    const view = before ? presentSubscription(before) : null;
    const state = before ? { status: before.status, planId: before.plan.id } : null;
    return {
      done: async (after) => {
        // The entitlement query reads the database: the change must be there first.
        await em.flush();
        await this.#record(em, owner, view, presentSubscription(after), state, {
          status: after.status,
          planId: after.plan.id,
        });
      },
    };
  }

  /**
   * Makes a provider notification's change read by `applyNewerProviderEvent` ('record_events') together
   * with its outbound events and MRR movements, in one statement (the Stripe receiver's hot path: no
   * transaction, no job insert in it; shared with other notifications' statements through `batches`),
   * then hands the deliveries to the job queue. `false` when the row changed since it was read: nothing
   * was written, and the caller reads it again.
   */
  async applyProviderChange(
    batches: ProviderEventBatches,
    event: { readonly id: string; readonly type: string },
    change: PendingProviderChange,
  ): Promise<boolean> {
    const prepared = this.events.prepare(change.wantsEvents ? eventsOfRowChange(change) : []);
    const result = await applyProviderChangeWithEvents(
      batches,
      event,
      change,
      { appId: change.after.app_id, ...prepared },
      this.#movementsOfProviderChange(change),
    );
    this.events.announce(result.deliveryIds);
    return result.applied;
  }

  /** Hands deliveries a committed statement wrote to the job queue (`OutboundEvents.announce`). */
  announce(deliveryIds: readonly string[]): void {
    this.events.announce(deliveryIds);
  }

  /** The movements `done` would record for the change (none when it leaves the MRR's inputs as they were). */
  #movementsOfProviderChange(change: PendingProviderChange): MovementValues[] {
    if (change.mrr === null || this.options.recordMovements === false) return [];
    const { after } = change;
    const owner = ownerOfRow(after);
    return mrrMovements({
      appId: owner.appId,
      subscriptionId: after.id,
      customerId: owner.customerId ?? null,
      organizationId: owner.organizationId ?? null,
      before: change.mrr.before,
      after: {
        amount: change.mrr.after.amount,
        currency: change.mrr.after.currency,
        status: after.status,
        planId: after.plan.id,
      },
      cause: 'notification',
    });
  }

  async #record(
    em: EntityManager,
    owner: BillingContext,
    before: SubscriptionView | null,
    after: SubscriptionView,
    stateBefore: SubscriptionState | null,
    stateAfter: SubscriptionState,
  ): Promise<void> {
    const subscription = subscriptionEvent(before, after);
    if (subscription) {
      await this.events.record(em, owner.appId, subscription.type, subscription.data, subscription.subjects);
    }
    if (!mayAlterEntitlements(stateBefore, stateAfter)) return;
    // Before: the subscription as it was (a new one as if it did not entitle); after: as stored now.
    const entitledBefore = await loadEntitledPlan(em, owner, {
      subscriptionId: after.id,
      status: stateBefore?.status ?? 'incomplete',
      planId: stateBefore?.planId ?? '',
    });
    const entitledAfter = await loadEntitledPlan(em, owner);
    const entitlements =
      !isDeepStrictEqual(entitledBefore, entitledAfter) &&
      entitlementsEvent(
        owner,
        entitledBefore,
        entitledAfter,
        (await loadEntitlementsVersion(em, owner)).version,
      );
    if (entitlements) {
      await this.events.record(em, owner.appId, entitlements.type, entitlements.data, entitlements.subjects);
    }
  }
}

/**
 * The events of a change of a subscription's row, with its owner's entitlements read before and after:
 * the same rules as `#record`. The Stripe receiver's function renders the same in SQL for the changes it
 * makes itself (subscription-event-sql.ts); this serves those it answers 'pending'.
 */
export function eventsOfRowChange(
  change: Pick<PendingProviderChange, 'before' | 'after' | 'entitlementsBefore' | 'entitlementsAfter'>,
): PlannedEvent[] {
  const owner = ownerOfRow(change.after);
  const planned: PlannedEvent[] = [];
  const subscription = subscriptionEvent(
    presentSubscriptionRow(change.before),
    presentSubscriptionRow(change.after),
  );
  if (subscription) planned.push(subscription);
  if (mayAlterEntitlements(stateOfRow(change.before), stateOfRow(change.after))) {
    // The change is the context's newest: its time is the entitlement version it leads to (at least).
    const ev = Date.parse(change.after.updated_at);
    const entitlements = entitlementsEvent(owner, change.entitlementsBefore, change.entitlementsAfter, ev);
    if (entitlements) planned.push(entitlements);
  }
  return planned;
}

/** What, of a subscription, decides what its owner is entitled to. */
interface SubscriptionState {
  readonly status: string;
  readonly planId: string;
}

function stateOfRow(row: SubscriptionRow): SubscriptionState {
  return { status: row.status, planId: row.plan_id };
}

function ownerOfRow(row: SubscriptionRow): BillingContext {
  return row.organization_id
    ? { appId: row.app_id, organizationId: row.organization_id }
    : { appId: row.app_id, customerId: row.customer_id! };
}

/**
 * `subscription.created` for a new subscription; `subscription.canceled` when it becomes canceled;
 * otherwise `subscription.updated` when anything the API shows changed; else none.
 */
function subscriptionEvent(before: SubscriptionView | null, after: SubscriptionView): PlannedEvent | null {
  // Its subjects: the subscription's owner, customer or organization.
  const subjects = [after.customerId, after.organizationId].filter((id): id is string => id !== null);
  if (before === null) return { type: 'subscription.created', data: after, subjects };
  if (after.status === 'canceled' && before.status !== 'canceled') {
    return { type: 'subscription.canceled', data: after, subjects };
  }
  if (!isDeepStrictEqual({ ...before, updatedAt: null }, { ...after, updatedAt: null })) {
    return { type: 'subscription.updated', data: after, subjects };
  }
  return null;
}

/** Only whether it entitles, and to which plan, can change what the owner is entitled to. */
function mayAlterEntitlements(before: SubscriptionState | null, after: SubscriptionState): boolean {
  return !(before && entitles(before.status) === entitles(after.status) && before.planId === after.planId);
}

/** `entitlements.updated` when what the owner is entitled to differs before and after. */
function entitlementsEvent(
  owner: BillingContext,
  before: EntitledPlan,
  after: EntitledPlan,
  ev: number,
): PlannedEvent | null {
  if (isDeepStrictEqual(before, after)) return null;
  const whose =
    owner.organizationId !== undefined
      ? { organizationId: owner.organizationId }
      : { customerId: owner.customerId };
  // `ev`: the entitlement version, as entitlement tokens carry it (a client holding an older one refreshes).
  return {
    type: 'entitlements.updated',
    data: { ...whose, planName: after.planName, features: entitlementFeatures(after.features), ev },
    subjects: [owner.organizationId ?? owner.customerId!],
  };
}
