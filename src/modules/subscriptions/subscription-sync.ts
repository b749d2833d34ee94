import type { EntityManager } from '@mikro-orm/core';
import type { ProviderSubscription } from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';
import type { Subscription } from './subscription.entity.js';
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
  if (remote.priceId && remote.priceId !== subscription.plan.stripePriceId) {
    const plan = await em.findOne(Plan, { app: subscription.app.id, stripePriceId: remote.priceId });
    if (plan) subscription.plan = plan;
  }
}
