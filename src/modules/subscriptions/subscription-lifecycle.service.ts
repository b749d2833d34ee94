import { type EntityManager, LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../core/errors.js';
import {
  type AppPrincipal,
  type AppScope,
  type Principal,
  requireAppPrincipal,
} from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import type { MovementCause } from '../analytics/mrr-movement.entity.js';
import { actingOnApp } from '../apps/app-rules.js';
import { OrganizationMember } from '../organizations/organization.entity.js';
import type {
  PaymentProvider,
  ProrationBehavior,
  ProviderSubscription,
} from '../payments/payment-provider.js';
import { overagePrices } from '../plans/metered-feature.js';
import { Plan } from '../plans/plan.entity.js';
import { Subscription } from './subscription.entity.js';
import { ownerOf, type SubscriptionEvents } from './subscription-events.js';
import {
  cancelSubscriptionSchema,
  changePlanSchema,
  noOptionsSchema,
  subscriptionIdSchema,
} from './subscription-lifecycle.schemas.js';
import { applyProviderState } from './subscription-sync.js';
import { hasEnded, type LifecycleAction, transitionProblem } from './subscription-transitions.js';

/** What a plan change would prorate now, from Stripe's preview of the next invoice. */
export interface PlanChangePreview {
  readonly planId: string;
  readonly prorationBehavior: ProrationBehavior;
  /** Minor units of `currency`; negative for a credit, 0 when nothing is prorated. */
  readonly amount: number;
  readonly currency: string;
}

/** A change made at Stripe and then stored: why it cannot apply, and how to make it. */
interface Change {
  /** Part of the idempotency key: the same change of the same stored state is made once. */
  readonly key: string;
  /** What the MRR ledger names as the movement's cause. */
  readonly cause: MovementCause;
  /** Null when the change applies to the locked subscription, else why not (409). */
  problem(subscription: Subscription): string | null;
  apply(subscription: Subscription, idempotencyKey: string): Promise<ProviderSubscription>;
  /** The plan the subscription moves to, when the change names one (not looked up by price). */
  readonly plan?: Plan;
}

/**
 * Cancel, pause, resume and plan changes: each change is made at Stripe first (with an idempotency key), then the
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
    return this.#change(caller, id, this.#lifecycle(atPeriodEnd ? 'cancel_at_period_end' : 'cancel'));
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
    return this.#change(caller, id, this.#lifecycle('pause'));
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
    return this.#change(caller, id, this.#lifecycle('resume'));
  }

  /**
   * Moves the subscription to another priced plan of its app: Stripe's subscription item gets the plan's
   * price (prorated as asked), and the stored subscription takes Stripe's answer and the plan at once, so
   * entitlements follow on every instance when it commits. Unknown or unpriced plan → 400; the plan it
   * already has, or a subscription that has ended → 409.
   */
  async changeSubscriptionPlan(
    principal: Principal,
    id: unknown,
    input: unknown,
    scope?: AppScope,
  ): Promise<Subscription> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    const { planId, prorationBehavior = 'create_prorations' } = parseInput(changePlanSchema, input ?? {});
    const subscriptionId = parseInput(subscriptionIdSchema, id);
    const target = await this.#targetPlan(caller, planId);
    return this.#change(caller, subscriptionId, {
      key: `change-plan-${target.id}-${prorationBehavior}`,
      cause: 'plan_change',
      problem: (subscription) => planChangeProblem(subscription, target),
      apply: (subscription, idempotencyKey) =>
        this.payments.changeSubscriptionPrice(
          subscription.stripeSubscriptionId,
          // The plan's item is the one at the current plan's price.
          {
            fromPriceId: currentPrice(subscription),
            priceId: target.stripePriceId!,
            prorationBehavior,
            meteredPriceIds: meteredPriceChange(subscription, target),
          },
          idempotencyKey,
        ),
      // Named, not looked up by price, so two plans sharing a price cannot be confused.
      plan: target,
    });
  }

  /** What `changeSubscriptionPlan` with the same input would prorate now; changes nothing. */
  async previewSubscriptionPlanChange(
    principal: Principal,
    id: unknown,
    input: unknown,
    scope?: AppScope,
  ): Promise<PlanChangePreview> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    const { planId, prorationBehavior = 'create_prorations' } = parseInput(changePlanSchema, input ?? {});
    const subscriptionId = parseInput(subscriptionIdSchema, id);
    const target = await this.#targetPlan(caller, planId);
    const em = this.orm.em;
    const subscription = await em.findOne(
      Subscription,
      { id: subscriptionId, app: caller.appId },
      { populate: ['plan'] },
    );
    if (!subscription) throw new NotFoundError('Subscription', subscriptionId);
    await this.#authorize(em, caller, subscription);
    const problem = planChangeProblem(subscription, target);
    if (problem) throw new ConflictError(problem);
    const preview = await this.payments.previewPriceChange(subscription.stripeSubscriptionId, {
      fromPriceId: currentPrice(subscription),
      priceId: target.stripePriceId!,
      prorationBehavior,
      meteredPriceIds: meteredPriceChange(subscription, target),
    });
    return { planId: target.slug, prorationBehavior, ...preview };
  }

  /** The app's plan a subscription may move to: it exists, is not archived and has a Stripe price (else 400). */
  async #targetPlan(caller: AppPrincipal, planId: string): Promise<Plan> {
    const plan = await this.orm.em.findOne(Plan, { app: caller.appId, slug: planId });
    if (!plan) throw ValidationError.forField('planId', `the app has no plan "${planId}"`);
    if (plan.archived) {
      throw ValidationError.forField('planId', `plan "${plan.slug}" is archived: nothing new moves to it`);
    }
    if (!plan.stripePriceId) {
      throw ValidationError.forField('planId', `plan "${plan.slug}" has no Stripe price to subscribe to`);
    }
    return plan;
  }

  #lifecycle(action: LifecycleAction): Change {
    return {
      key: action,
      cause: action === 'cancel_at_period_end' ? 'cancel' : action,
      problem: (subscription) => transitionProblem(action, subscription),
      apply: (subscription, idempotencyKey) =>
        this.#applyAtProvider(subscription.stripeSubscriptionId, action, idempotencyKey),
    };
  }

  async #change(caller: AppPrincipal, rawId: unknown, operation: Change): Promise<Subscription> {
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
      const problem = operation.problem(subscription);
      if (problem) throw new ConflictError(problem);
      // One key per change of one stored state: a retry after a lost answer replays Stripe's first
      // result instead of applying the change twice, while a later change gets a fresh key.
      const idempotencyKey = `tollgate-${subscription.id}-${operation.key}-${subscription.updatedAt.getTime()}`;
      const remote = await operation.apply(subscription, idempotencyKey);
      // Stripe's answer is stored as a notification would store it, as of now: notifications created
      // before this change are older news and are ignored; those of this very second are checked
      // against Stripe's current state by the receiver, so they cannot undo the change either.
      const now = Math.floor(this.clock.now().getTime() / 1000);
      const change = await this.events.begin(em, ownerOf(subscription), subscription, operation.cause);
      if (operation.plan) subscription.plan = operation.plan;
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

/** Why a subscription cannot move to `target` (409), or null. */
/** The Stripe price of the subscription's plan, by which its item is found at Stripe. */
function currentPrice(subscription: Subscription): string {
  return subscription.plan.stripePriceId ?? '';
}

function planChangeProblem(subscription: Subscription, target: Plan): string | null {
  if (hasEnded(subscription.status)) {
    return `The subscription is ${subscription.status}: its plan can no longer be changed`;
  }
  if (subscription.plan.id === target.id) return `The subscription is already on plan "${target.slug}"`;
  return null;
}

/** The overage prices (metered items) of the subscription's plan and of the plan it moves to. */
function meteredPriceChange(subscription: Subscription, target: Plan): { from: string[]; to: string[] } {
  return {
    from: [...overagePrices(subscription.plan.features).values()],
    to: [...overagePrices(target.features).values()],
  };
}
