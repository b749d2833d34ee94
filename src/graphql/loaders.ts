import type { MikroORM } from '@mikro-orm/postgresql';
import DataLoader from 'dataloader';
import type { Principal } from '../core/principal.js';
import { Plan } from '../modules/plans/plan.entity.js';
import { Subscription } from '../modules/subscriptions/subscription.entity.js';

/**
 * Per-request batching for nested GraphQL lists: a field resolved once per parent (a customer's
 * subscriptions, a subscription's plan) asks a loader, and all asks of one tick become one query.
 * A registry lives in each request's context, so nothing is cached across requests or callers.
 *
 * Loaders only read children of parents a service has already authorised; each query is still
 * restricted to the caller's app, so a wrong id can never reach another tenant's rows.
 */
export class Loaders {
  readonly #loaders = new Map<string, DataLoader<unknown, unknown>>();

  constructor(
    private readonly orm: MikroORM,
    private readonly principal: Principal,
  ) {}

  /** The request's loader named `name`, created on first use from `batch`. */
  get<K, V>(name: string, batch: DataLoader.BatchLoadFn<K, V>): DataLoader<K, V> {
    let loader = this.#loaders.get(name);
    if (!loader) {
      loader = new DataLoader(batch as DataLoader.BatchLoadFn<unknown, unknown>);
      this.#loaders.set(name, loader);
    }
    return loader as DataLoader<K, V>;
  }

  /** A customer's subscriptions, newest first (canceled ones included: this is the history). */
  get subscriptionsByCustomer(): DataLoader<string, Subscription[]> {
    return this.get('subscriptionsByCustomer', async (customerIds: readonly string[]) => {
      const scope = this.appScope();
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
    });
  }

  /** Plans by their internal id (the id a subscription points to). */
  get planById(): DataLoader<string, Plan | null> {
    return this.get('planById', async (ids: readonly string[]) => {
      const scope = this.appScope();
      const rows = scope ? await this.orm.em.find(Plan, { id: { $in: [...ids] }, ...scope }) : [];
      const byId = new Map(rows.map((plan) => [plan.id, plan]));
      return ids.map((id) => byId.get(id) ?? null);
    });
  }

  /** The caller's tenant as a filter; the operator sees every app, an anonymous caller nothing. */
  private appScope(): { app?: string } | undefined {
    switch (this.principal.kind) {
      case 'apiKey':
      case 'session':
        return { app: this.principal.appId };
      case 'admin':
        return {};
      case 'anonymous':
        return undefined;
    }
  }
}
