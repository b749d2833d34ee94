import { AsyncLocalStorage } from 'node:async_hooks';
import { type EntityManager, TransactionContext } from '@mikro-orm/core';

/**
 * The unit of work of one request (or job): an EntityManager fork, made when something first asks for
 * it. A request answered from memory (a cached entitlement check, a cached session) never asks, and
 * forking costs about a twentieth of such a request's CPU (`bench/metering.js`, the check).
 *
 * MikroORM finds the fork through its `context` option (src/db.ts), where it would otherwise ask
 * `RequestContext`; what runs inside a scope sees one fork, as with `RequestContext.create`.
 */
class RequestUnitOfWork {
  #fork: EntityManager | undefined;
  #forking = false;

  constructor(private readonly root: EntityManager) {}

  get forked(): boolean {
    return this.#fork !== undefined;
  }

  em(name: string): EntityManager | undefined {
    if (name !== this.root.name) return undefined;
    if (this.#fork === undefined && !this.#forking) {
      // A new fork asks for its context while it is being built; it is then its own (undefined lets
      // MikroORM fall back to the fork itself).
      this.#forking = true;
      try {
        this.#fork = this.root.fork({ useContext: true, disableContextResolution: true });
      } finally {
        this.#forking = false;
      }
    }
    return this.#fork;
  }
}

const scopes = new AsyncLocalStorage<RequestUnitOfWork>();

/** Runs `fn` with a unit of work of its own (forked from `root` on first use), as every HTTP request does. */
export function withUnitOfWork<T>(root: EntityManager, fn: () => T): T {
  return scopes.run(new RequestUnitOfWork(root), fn);
}

/** The `context` option of MikroORM: the current scope's fork of the EntityManager named `name`. */
export function currentUnitOfWork(name: string): EntityManager | undefined {
  return scopes.getStore()?.em(name);
}

/**
 * Whether `em` (the global EntityManager, or a fork) is inside a transaction, without forking one for a
 * scope that has not needed it: a scope with no fork yet has opened none.
 */
export function inTransaction(em: EntityManager): boolean {
  const scope = scopes.getStore();
  const unforked = scope !== undefined && !scope.forked && em.global;
  // A transaction begun on a fork made outside the scope is found through MikroORM's own context.
  if (unforked && TransactionContext.getEntityManager(em.name) === undefined) return false;
  return em.isInTransaction();
}
