import { type EntityManager, LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../../core/errors.js';
import {
  type AppPrincipal,
  type AppScope,
  type Principal,
  requireAppPrincipal,
} from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { actingOnApp } from '../apps/app-rules.js';
import { OrganizationMember } from '../organizations/organization.entity.js';
import type { PaymentProvider, ProviderSubscription } from '../payments/payment-provider.js';
import { Subscription } from './subscription.entity.js';
import { ownerOf, type SubscriptionEvents } from './subscription-events.js';
import {
  cancelSubscriptionSchema,
  noOptionsSchema,
  subscriptionIdSchema,
} from './subscription-lifecycle.schemas.js';
import { applyProviderState } from './subscription-sync.js';
import { type LifecycleAction, transitionProblem } from './subscription-transitions.js';

/**
 * Cancel, pause and resume: each change is made at Stripe first (with an idempotency key), then the
 * answer Stripe gives is stored, so Tollgate never claims a state Stripe does not have. The notification
 * Stripe sends later for the same change carries the same state and leaves it as it is.
 *
 * Who may act: an API key of the subscription's app; a customer session for its own subscription, or for
 * an organization's subscription when it is the organization's owner or admin (a plain member → 403).
 * Any other subscription, another app's included, is reported as absent (404). The operator acts as the
 * API key of the app it names (`scope`).
 */
export class SubscriptionLifecycleService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly payments: PaymentProvider,
    private readonly events: SubscriptionEvents,
  ) {}

  /** Cancels now (→ `canceled`), or with `atPeriodEnd: true` at the end of the paid period. */
  async cancelSubscription(
    principal: Principal,
    id: unknown,
    input: unknown,
    scope?: AppScope,
  ): Promise<Subscription> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    const { atPeriodEnd } = parseInput(cancelSubscriptionSchema, input ?? {});
    return this.#change(caller, id, atPeriodEnd ? 'cancel_at_period_end' : 'cancel');
  }

  /** Pauses collection at Stripe (→ `paused`, which grants no entitlements). */
  async pauseSubscription(
    principal: Principal,
    id: unknown,
    input: unknown,
    scope?: AppScope,
  ): Promise<Subscription> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    parseInput(noOptionsSchema, input ?? {});
    return this.#change(caller, id, 'pause');
  }

  /** Resumes a paused subscription, or withdraws a cancellation scheduled for the period end. */
  async resumeSubscription(
    principal: Principal,
    id: unknown,
    input: unknown,
    scope?: AppScope,
  ): Promise<Subscription> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    parseInput(noOptionsSchema, input ?? {});
    return this.#change(caller, id, 'resume');
  }

  async #change(caller: AppPrincipal, rawId: unknown, action: LifecycleAction): Promise<Subscription> {
    const id = parseInput(subscriptionIdSchema, rawId);
    // The row stays locked across the Stripe call, so concurrent changes of one subscription are
    // judged one after the other against the state the previous one left.
    return this.orm.em.transactional(async (em) => {
      const subscription = await em.findOne(
        Subscription,
        { id, app: caller.appId },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!subscription) throw new NotFoundError('Subscription', id);
      // Loaded apart from the locked read, so the row lock never extends to the plan's row.
      await em.populate(subscription, ['plan']);
      await this.#authorize(em, caller, subscription);
      const problem = transitionProblem(action, subscription);
      if (problem) throw new ConflictError(problem);
      // One key per change of one stored state: a retry after a lost answer replays Stripe's first
      // result instead of applying the change twice, while a later change gets a fresh key.
      const idempotencyKey = `tollgate-${subscription.id}-${action}-${subscription.updatedAt.getTime()}`;
      const remote = await this.#applyAtProvider(subscription.stripeSubscriptionId, action, idempotencyKey);
      // Stripe's answer is stored as a notification would store it, as of now: notifications created
      // before this change are older news and are ignored; those of this very second are checked
      // against Stripe's current state by the receiver, so they cannot undo the change either.
      const now = Math.floor(this.clock.now().getTime() / 1000);
      const change = await this.events.begin(em, ownerOf(subscription), subscription);
      await applyProviderState(em, subscription, remote, now);
      await change.done(subscription);
      return subscription;
    });
  }

  async #authorize(em: EntityManager, caller: AppPrincipal, subscription: Subscription): Promise<void> {
    if (caller.kind === 'apiKey') return;
    if (subscription.organization) {
      // The current membership decides, not the role remembered in the session, so a demotion counts at once.
      const membership = await em.findOne(OrganizationMember, {
        organization: subscription.organization,
        customer: caller.customerId,
      });
      if (!membership) throw new NotFoundError('Subscription', subscription.id);
      if (membership.role === 'member') {
        throw new ForbiddenError(
          "Only an owner or admin of the organization can change the organization's subscription",
        );
      }
      return;
    }
    if (subscription.customer?.id !== caller.customerId)
      throw new NotFoundError('Subscription', subscription.id);
  }

  #applyAtProvider(
    stripeSubscriptionId: string,
    action: LifecycleAction,
    idempotencyKey: string,
  ): Promise<ProviderSubscription> {
    switch (action) {
      case 'cancel':
        return this.payments.cancelSubscription(stripeSubscriptionId, idempotencyKey);
      case 'cancel_at_period_end':
        return this.payments.updateSubscription(
          stripeSubscriptionId,
          { cancelAtPeriodEnd: true },
          idempotencyKey,
        );
      case 'pause':
        return this.payments.updateSubscription(
          stripeSubscriptionId,
          { pauseCollection: true },
          idempotencyKey,
        );
      case 'resume':
        return this.payments.updateSubscription(
          stripeSubscriptionId,
          { pauseCollection: false, cancelAtPeriodEnd: false },
          idempotencyKey,
        );
    }
  }
}
