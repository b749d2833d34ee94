import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import type { WebhookEventType } from '../webhooks/webhook-event-types.js';
import type { BillingContext } from './billing-context.js';
import { loadEntitledPlan } from './entitled-plan.js';
import { ENTITLING_STATUSES, type Subscription } from './subscription.entity.js';
import {
  presentSubscription,
  presentSubscriptionRow,
  type SubscriptionView,
} from './subscription.presenter.js';
import type { SubscriptionRow } from './subscription-sync.js';

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

const ENTITLING: ReadonlySet<string> = new Set(ENTITLING_STATUSES);
const entitles = (status: string) => ENTITLING.has(status);

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

  /** Records the events of a change already written (rows before and after, as stored), in its transaction. */
  async recordApplied(em: EntityManager, before: SubscriptionRow, after: SubscriptionRow): Promise<void> {
    const owner: BillingContext = after.organization_id
      ? { appId: after.app_id, organizationId: after.organization_id }
      : { appId: after.app_id, customerId: after.customer_id! };
    await this.#record(
      em,
      owner,
      presentSubscriptionRow(before),
      presentSubscriptionRow(after),
      { status: before.status, planId: before.plan_id },
      { status: after.status, planId: after.plan_id },
    );
  }

  async #record(
    em: EntityManager,
    owner: BillingContext,
    before: SubscriptionView | null,
    after: SubscriptionView,
    stateBefore: { status: string; planId: string } | null,
    stateAfter: { status: string; planId: string },
  ): Promise<void> {
    await this.#recordSubscription(em, owner.appId, before, after);
    // Only whether it entitles, and to which plan, can change what the owner is entitled to.
    if (
      stateBefore &&
      entitles(stateBefore.status) === entitles(stateAfter.status) &&
      stateBefore.planId === stateAfter.planId
    ) {
      return;
    }
    await this.#recordEntitlements(em, owner, after.id, stateBefore);
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

  async #recordEntitlements(
    em: EntityManager,
    owner: BillingContext,
    subscriptionId: string,
    previous: { status: string; planId: string } | null,
  ): Promise<void> {
    // Before: the subscription as it was (a new one as if it did not entitle); after: as stored now.
    const before = await loadEntitledPlan(em, owner, {
      subscriptionId,
      status: previous?.status ?? 'incomplete',
      planId: previous?.planId ?? '',
    });
    const after = await loadEntitledPlan(em, owner);
    if (isDeepStrictEqual(before, after)) return;
    const whose =
      owner.organizationId !== undefined
        ? { organizationId: owner.organizationId }
        : { customerId: owner.customerId };
    await this.events.record(em, owner.appId, 'entitlements.updated', { ...whose, ...after });
  }
}
