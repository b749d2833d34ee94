import DataLoader from 'dataloader';

/**
 * Per-request batching for nested GraphQL lists: a field resolved once per parent (a customer's
 * subscriptions, a subscription's plan) asks a loader, and all asks of one tick become one call of the
 * batch function, which is a service method (the service scopes the query to the caller's tenant).
 * A registry lives in each request's context, so nothing is cached across requests or callers.
 */
export class Loaders {
  readonly #loaders = new Map<string, DataLoader<unknown, unknown>>();

  /** The request's loader named `name`, created on first use from `batch`. */
  get<K, V>(name: string, batch: DataLoader.BatchLoadFn<K, V>): DataLoader<K, V> {
    let loader = this.#loaders.get(name);
    if (!loader) {
      loader = new DataLoader(batch as DataLoader.BatchLoadFn<unknown, unknown>);
      this.#loaders.set(name, loader);
    }
    return loader as DataLoader<K, V>;
  }
}
