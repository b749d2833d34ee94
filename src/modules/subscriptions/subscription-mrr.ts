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

/**
 * Counts a subscription as Stripe's state says (its status already applied): its MRR, currency,
 * quantity and discounts. A discount given by id alone keeps the coupon terms it was counted with.
 */
export function countSubscription(subscription: Subscription, remote: ProviderSubscription): void {
  const known = new Map(subscription.mrrDiscounts.map((d) => [d.id, d.coupon]));
  const discounts: ProviderSubscriptionDiscount[] = remote.discounts.map((d) => ({
    id: d.id,
    coupon: d.coupon ?? known.get(d.id) ?? null,
  }));
  const coupons: MrrCoupon[] = discounts.flatMap((d) => (d.coupon ? [d.coupon] : []));
  const mrr = subscriptionMrr({ status: subscription.status, items: remote.items, coupons });
  subscription.mrrAmount = mrr.amount;
  subscription.mrrCurrency = mrr.currency ?? subscription.mrrCurrency;
  subscription.mrrQuantity = mrr.quantity;
  subscription.mrrDiscounts = discounts;
  subscription.mrrInputs = mrrInputsOf(remote);
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
