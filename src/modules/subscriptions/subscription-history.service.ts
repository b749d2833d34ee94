import type { MikroORM } from '@mikro-orm/postgresql';
import { ForbiddenError } from '../../core/errors.js';
import { type Principal, requireAppPrincipal, requireSession } from '../../core/principal.js';
import { Subscription } from './subscription.entity.js';

/**
 * Subscription history: every subscription of a customer or organization, canceled ones included,
 * newest first. GraphQL only (the interface shows no HTTP path for it).
 */
export class SubscriptionHistoryService {
  constructor(private readonly orm: MikroORM) {}

  /**
   * The calling session's history: its organization's subscriptions after a switch, else its customer's.
   * An API key has no "own" subscriptions (it names a customer through `customer(id) { subscriptions }`).
   */
  async listOwnSubscriptions(principal: Principal): Promise<Subscription[]> {
    const session = requireSession(principal);
    const owner =
      session.organizationId !== undefined
        ? { organization: session.organizationId }
        : { customer: session.customerId };
    return this.orm.em.find(
      Subscription,
      { app: session.appId, ...owner },
      { populate: ['plan'], orderBy: { createdAt: 'desc', id: 'desc' } },
    );
  }

  /**
   * Whether the caller may read `customerId`'s history: an API key of the app the customer was read
   * through, or the customer's own session. Checked without a query, so a list of customers costs none.
   */
  assertMayReadCustomerHistory(principal: Principal, customerId: string): void {
    const caller = requireAppPrincipal(principal);
    if (caller.kind === 'session' && caller.customerId !== customerId) {
      throw new ForbiddenError("A customer session may read only its own customer's subscriptions");
    }
  }
}
