import type { CountedState } from '../analytics/mrr-ledger.js';
import { type MrrCoupon, statusClass, subscriptionMrr } from '../analytics/mrr-rules.js';
import type { ProviderSubscription, ProviderSubscriptionDiscount } from '../payments/payment-provider.js';
import type { Subscription } from './subscription.entity.js';
import { statusFromProvider } from './subscription-transitions.js';

/**
 * Everything of Stripe's state a subscription's MRR and counts depend on, as one string: the class of its
 * status, its items' prices and quantities, its discounts. Equal strings, equal MRR.
 */
export function mrrInputsOf(remote: ProviderSubscription): string {
  return JSON.stringify([
    statusClass(statusFromProvider(remote)),
    remote.items.map((i) => [
      i.priceId,
      i.unitAmount,
      i.currency,
      i.interval,
      i.intervalCount,
      i.usageType,
      i.quantity,
    ]),
    remote.discounts.map((d) => d.id),
  ]);
}

/** What a subscription is counted with in the MRR ledger (the `mrr…` columns of its row). */
export interface MrrCount {
  readonly amount: number;
  readonly currency: string | null;
  readonly quantity: number;
  readonly discounts: ProviderSubscriptionDiscount[];
  readonly inputs: string;
}

/**
 * How a subscription counts as Stripe's state says, at `status` (Tollgate's, already applied), from how
 * it was counted (`counted`): its MRR, currency, quantity and discounts. A discount given by id alone
 * keeps the coupon terms it was counted with; a currency unknown now keeps the one counted.
 */
export function countFromProvider(
  status: string,
  remote: ProviderSubscription,
  counted: { readonly currency: string | null; readonly discounts: readonly ProviderSubscriptionDiscount[] },
): MrrCount {
  const known = new Map(counted.discounts.map((d) => [d.id, d.coupon]));
  const discounts: ProviderSubscriptionDiscount[] = remote.discounts.map((d) => ({
    id: d.id,
    coupon: d.coupon ?? known.get(d.id) ?? null,
  }));
  const coupons: MrrCoupon[] = discounts.flatMap((d) => (d.coupon ? [d.coupon] : []));
  const mrr = subscriptionMrr({ status, items: remote.items, coupons });
  return {
    amount: mrr.amount,
    currency: mrr.currency ?? counted.currency,
    quantity: mrr.quantity,
    discounts,
    inputs: mrrInputsOf(remote),
  };
}

/** Counts a subscription as Stripe's state says (its status already applied): see `countFromProvider`. */
export function countSubscription(subscription: Subscription, remote: ProviderSubscription): void {
  const count = countFromProvider(subscription.status, remote, {
    currency: subscription.mrrCurrency,
    discounts: subscription.mrrDiscounts,
  });
  subscription.mrrAmount = count.amount;
  subscription.mrrCurrency = count.currency;
  subscription.mrrQuantity = count.quantity;
  subscription.mrrDiscounts = count.discounts;
  subscription.mrrInputs = count.inputs;
}

/** How the subscription counts now, for the ledger's "before" and "after". */
export function countedStateOf(subscription: Subscription): CountedState & { readonly planId: string } {
  return {
    amount: subscription.mrrAmount,
    currency: subscription.mrrCurrency,
    status: subscription.status,
    planId: subscription.plan.slug,
  };
}
