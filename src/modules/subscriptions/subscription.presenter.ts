import type { Subscription } from './subscription.entity.js';
import type { SubscriptionRow } from './subscription-sync.js';

/** The Subscription object of the REST API (DESIGN.md), frozen here so the entity can change freely. */
export interface SubscriptionView {
  readonly id: string;
  readonly customerId: string | null;
  readonly organizationId: string | null;
  readonly plan: { readonly id: string; readonly name: string };
  readonly status: string;
  readonly currentPeriodEnd: string | null;
  readonly cancelAtPeriodEnd: boolean;
  readonly trialEnd: string | null;
  readonly canceledAt: string | null;
  readonly metadata: Record<string, unknown>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

const iso = (date: Date | null): string | null => (date ? new Date(date).toISOString() : null);

/** Needs `plan` loaded (services populate it). */
export function presentSubscription(subscription: Subscription): SubscriptionView {
  return {
    id: subscription.id,
    customerId: subscription.customer?.id ?? null,
    organizationId: subscription.organization?.id ?? null,
    plan: { id: subscription.plan.slug, name: subscription.plan.name },
    status: subscription.status,
    currentPeriodEnd: iso(subscription.currentPeriodEnd),
    cancelAtPeriodEnd: subscription.cancelAtPeriodEnd,
    trialEnd: iso(subscription.trialEnd),
    canceledAt: iso(subscription.canceledAt),
    metadata: { ...subscription.metadata },
    createdAt: new Date(subscription.createdAt).toISOString(),
    updatedAt: new Date(subscription.updatedAt).toISOString(),
  };
}

/** The same object from a stored row (as the Stripe receiver's statement reads it, `row_to_json`). */
export function presentSubscriptionRow(row: SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    customerId: row.customer_id,
    organizationId: row.organization_id,
    plan: { id: row.plan.id, name: row.plan.name },
    status: row.status,
    currentPeriodEnd: iso(row.current_period_end === null ? null : new Date(row.current_period_end)),
    cancelAtPeriodEnd: row.cancel_at_period_end,
    trialEnd: iso(row.trial_end === null ? null : new Date(row.trial_end)),
    canceledAt: iso(row.canceled_at === null ? null : new Date(row.canceled_at)),
    metadata: { ...(row.metadata ?? {}) },
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}
