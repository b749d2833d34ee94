import type { MikroORM } from '@mikro-orm/postgresql';
import { ForbiddenError, NotFoundError, ValidationError } from '../../core/errors.js';
import { type Principal, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { Customer } from '../customers/customer.entity.js';
import { entitlementQuerySchema } from '../entitlements/entitlements.schemas.js';
import { Organization } from '../organizations/organization.entity.js';
import { ENTITLING_STATUSES, Subscription } from './subscription.entity.js';

/** Whose subscription: a customer's own, or an organization's (shared by its members). */
type SubscriptionContext =
  | { readonly appId: string; readonly customerId: string }
  | { readonly appId: string; readonly organizationId: string };

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

  /** As `getCurrentSubscription`, with null when the context has no entitling subscription. */
  async findCurrentSubscription(principal: Principal, query: unknown): Promise<Subscription | null> {
    const context = await this.#contextOf(principal, query);
    const owner =
      'organizationId' in context
        ? { organization: context.organizationId }
        : { customer: context.customerId, organization: null };
    return this.orm.em.findOne(
      Subscription,
      { app: context.appId, ...owner, status: { $in: [...ENTITLING_STATUSES] } },
      { populate: ['plan'], orderBy: { createdAt: 'desc', id: 'desc' } },
    );
  }

  /** The same context rule as entitlements, so both answer for the same customer or organization. */
  async #contextOf(principal: Principal, query: unknown): Promise<SubscriptionContext> {
    const caller = requireAppPrincipal(principal);
    if (caller.kind === 'session') {
      if (query && typeof query === 'object' && Object.keys(query).length > 0) {
        throw new ValidationError(
          'a session token uses its own context: customerId and organizationId are for API keys',
        );
      }
      return caller.organizationId !== undefined
        ? { appId: caller.appId, organizationId: caller.organizationId }
        : { appId: caller.appId, customerId: caller.customerId };
    }
    const { customerId, organizationId } = parseInput(entitlementQuerySchema, query ?? {});
    const em = this.orm.em;
    if (customerId !== undefined) {
      if (!(await em.count(Customer, { id: customerId, app: caller.appId })))
        throw new NotFoundError('Customer', customerId);
      return { appId: caller.appId, customerId };
    }
    const app = await em.findOneOrFail(App, { id: caller.appId });
    if (!app.organizationsEnabled) throw new ForbiddenError('Organizations are not enabled for this app');
    if (!(await em.count(Organization, { id: organizationId!, app: caller.appId }))) {
      throw new NotFoundError('Organization', organizationId);
    }
    return { appId: caller.appId, organizationId: organizationId! };
  }
}
