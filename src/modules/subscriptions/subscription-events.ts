import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import type { WebhookEventType } from '../webhooks/webhook-event-types.js';
import type { BillingContext } from './billing-context.js';
import { type EntitledPlan, loadEntitledPlan } from './entitled-plan.js';
import type { Subscription } from './subscription.entity.js';
import { presentSubscription, type SubscriptionView } from './subscription.presenter.js';

const TYPES: readonly WebhookEventType[] = [
  'subscription.created',
  'subscription.updated',
  'subscription.canceled',
  'entitlements.updated',
];

/** A change under way; `done` records its events once the subscription holds its new state. */
export interface SubscriptionChange {
  done(after: Subscription): Promise<void>;
}

const NOTHING_TO_RECORD: SubscriptionChange = { done: async () => undefined };

/** Whose entitlements a subscription decides. */
export function ownerOf(subscription: Subscription): BillingContext {
  return subscription.organization
    ? { appId: subscription.app.id, organizationId: subscription.organization.id }
    : { appId: subscription.app.id, customerId: subscription.customer!.id };
}

/**
 * The one place where subscription changes become outbound events, used by every path that writes a
 * subscription's state (checkout completion, provider notifications, cancel/pause/resume), inside the
 * transaction of the change: `begin` before it, `done` after it.
 *
 * - `subscription.created` for a new subscription; `subscription.canceled` when it becomes canceled;
 *   otherwise `subscription.updated` when anything the API shows changed. `data` is the Subscription
 *   object as the REST API shows it.
 * - `entitlements.updated` when the change alters what its owner (customer or organization) is
 *   entitled to, compared before and after in the same transaction.
 *
 * When the app has no endpoint taking these types, nothing is read or written beyond that one check.
 */
export class SubscriptionEvents {
  constructor(private readonly events: OutboundEvents) {}

  /** Call before changing `before` (null: a subscription about to be created for `owner`). */
  async begin(
    em: EntityManager,
    owner: BillingContext,
    before: Subscription | null,
  ): Promise<SubscriptionChange> {
    if (!(await this.events.wants(em, owner.appId, TYPES))) return NOTHING_TO_RECORD;
    const view = before ? presentSubscription(before) : null;
    const entitledBefore = await loadEntitledPlan(em, owner);
    return {
      done: async (after) => {
        // The entitlement query reads the database: the change must be there first.
        await em.flush();
        await this.#recordSubscription(em, owner.appId, view, presentSubscription(after));
        await this.#recordEntitlements(em, owner, entitledBefore);
      },
    };
  }

  async #recordSubscription(
    em: EntityManager,
    appId: string,
    before: SubscriptionView | null,
    after: SubscriptionView,
  ): Promise<void> {
    if (before === null) {
      await this.events.record(em, appId, 'subscription.created', after);
    } else if (after.status === 'canceled' && before.status !== 'canceled') {
      await this.events.record(em, appId, 'subscription.canceled', after);
    } else if (!isDeepStrictEqual({ ...before, updatedAt: null }, { ...after, updatedAt: null })) {
      await this.events.record(em, appId, 'subscription.updated', after);
    }
  }

  async #recordEntitlements(em: EntityManager, owner: BillingContext, before: EntitledPlan): Promise<void> {
    const after = await loadEntitledPlan(em, owner);
    if (isDeepStrictEqual(before, after)) return;
    const whose =
      owner.organizationId !== undefined
        ? { organizationId: owner.organizationId }
        : { customerId: owner.customerId };
    await this.events.record(em, owner.appId, 'entitlements.updated', { ...whose, ...after });
  }
}
