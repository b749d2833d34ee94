import type { MikroORM } from '@mikro-orm/postgresql';
import { ForbiddenError } from '../../core/errors.js';
import { type Principal, requireAppPrincipal } from '../../core/principal.js';
import { Plan } from '../plans/plan.entity.js';
import { billingContextOf } from './billing-context.js';
import { Subscription } from './subscription.entity.js';

/** The caller's tenant as a filter; the operator sees every app, an anonymous caller nothing. */
function appScopeOf(principal: Principal): { app?: string } | undefined {
  switch (principal.kind) {
    case 'apiKey':
    case 'session':
      return { app: principal.appId };
    case 'admin':
      return {};
    case 'anonymous':
      return undefined;
  }
}

/**
 * Subscription history: every subscription of a customer or organization, canceled ones included,
 * newest first. `GET /v1/subscriptions` and GraphQL `subscriptions` / `customer(id) { subscriptions }`.
 */
export class SubscriptionHistoryService {
  constructor(private readonly orm: MikroORM) {}

  /**
   * A context's history, one rule with `/v1/subscriptions/current`: a session its own context (its
   * organization's after a switch, else its customer's); an API key exactly one of `customerId` /
   * `organizationId` of its app (another app's → 404).
   */
  async listSubscriptions(principal: Principal, query: unknown): Promise<Subscription[]> {
    const context = await billingContextOf(this.orm, principal, query);
    const owner =
      context.organizationId !== undefined
        ? { organization: context.organizationId }
        : { customer: context.customerId, organization: null };
    return this.orm.em.find(
      Subscription,
      { app: context.appId, ...owner },
      { populate: ['plan'], orderBy: { createdAt: 'desc', id: 'desc' } },
    );
  }

  /**
   * Several customers' histories in one query, in the order of `customerIds` (for a page of customers).
   * Callers have authorised each customer (assertMayReadCustomerHistory); the query is still restricted
   * to the caller's app, so a wrong id can never reach another tenant's rows.
   */
  async historiesOfCustomers(
    principal: Principal,
    customerIds: readonly string[],
  ): Promise<Subscription[][]> {
    const scope = appScopeOf(principal);
    const rows = scope
      ? await this.orm.em.find(
          Subscription,
          { customer: { $in: [...customerIds] }, ...scope },
          { orderBy: { createdAt: 'desc', id: 'desc' } },
        )
      : [];
    const byCustomer = new Map<string, Subscription[]>(customerIds.map((id) => [id, []]));
    for (const row of rows) if (row.customer) byCustomer.get(row.customer.id)?.push(row);
    return customerIds.map((id) => byCustomer.get(id) ?? []);
  }

  /**
   * Plans by their internal id (the id a subscription points to), in one query and in the order of
   * `ids`; restricted to the caller's app like the histories they belong to.
   */
  async plansByIds(principal: Principal, ids: readonly string[]): Promise<(Plan | null)[]> {
    const scope = appScopeOf(principal);
    const rows = scope ? await this.orm.em.find(Plan, { id: { $in: [...ids] }, ...scope }) : [];
    const byId = new Map(rows.map((plan) => [plan.id, plan]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  /**
   * Whether the caller may read `customerId`'s history: an API key of the app the customer was read
   * through, the operator (who reads a customer only through an app it names, `customer(id, appId)`),
   * or the customer's own session. Checked without a query, so a list of customers costs none.
   */
  assertMayReadCustomerHistory(principal: Principal, customerId: string): void {
    if (principal.kind === 'admin') return;
    const caller = requireAppPrincipal(principal);
    if (caller.kind === 'session' && caller.customerId !== customerId) {
      throw new ForbiddenError("A customer session may read only its own customer's subscriptions");
    }
  }
}
