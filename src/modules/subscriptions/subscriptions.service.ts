import type { MikroORM } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../core/errors.js';
import { type AppScope, type Principal } from '../../core/principal.js';
import { actingOnApp } from '../apps/app-rules.js';
import { billingContextOf } from './billing-context.js';
import { ENTITLING_STATUSES, Subscription } from './subscription.entity.js';

/** Reading subscriptions back. Subscriptions are created and kept in sync by Stripe's notifications. */
export class SubscriptionsService {
  constructor(private readonly orm: MikroORM) {}

  /**
   * `GET /v1/subscriptions/current`: the newest entitling (trialing, active, past_due) subscription of
   * the session's context, or with an API key of `customerId` / `organizationId`; none → 404.
   */
  async getCurrentSubscription(principal: Principal, query: unknown): Promise<Subscription> {
    const subscription = await this.findCurrentSubscription(principal, query);
    if (!subscription) throw new NotFoundError('Subscription');
    return subscription;
  }

  /**
   * As `getCurrentSubscription`, with null when the context has no entitling subscription; the operator
   * names the app (`scope`).
   */
  async findCurrentSubscription(
    principal: Principal,
    query: unknown,
    scope?: AppScope,
  ): Promise<Subscription | null> {
    const acting = await actingOnApp(this.orm.em, principal, scope);
    const context = await billingContextOf(this.orm, acting, query);
    const owner =
      context.organizationId !== undefined
        ? { organization: context.organizationId }
        : { customer: context.customerId, organization: null };
    return this.orm.em.findOne(
      Subscription,
      { app: context.appId, ...owner, status: { $in: [...ENTITLING_STATUSES] } },
      { populate: ['plan'], orderBy: { createdAt: 'desc', id: 'desc' } },
    );
  }
}
