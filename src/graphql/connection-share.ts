import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient } from 'pg';
import { Turns } from './request-limits.js';

/** The connection turns of the GraphQL request the current code runs for, if any. */
const currentRequest = new AsyncLocalStorage<Turns>();

const installed = new WeakSet<Pool>();

/** What pg-pool's `connect(callback)` calls back with. */
type ConnectCallback = (error: Error | undefined, client: PoolClient | undefined, done: () => void) => void;

/**
 * Caps the database connections one GraphQL request holds at once. graphql-js resolves sibling fields
 * concurrently, and each query MikroORM runs outside a transaction checks a connection out of the shared
 * pool for its duration: a document with many aliases of a database-backed field would otherwise take
 * the whole pool and make every other tenant wait.
 *
 * MikroORM 7 reaches PostgreSQL through Kysely's driver, which calls the `pg` pool's `connect()` for each
 * statement (or once per transaction) and `release()` after it; the pool is the one place every path
 * goes through. So the pool's `connect` is wrapped: inside a GraphQL request (known through
 * AsyncLocalStorage, which follows the resolvers' promises and dataloader batches) a checkout first takes
 * one of the request's turns, and the pool's own `release` event gives it back. The client's `release`
 * is left alone: the database layer's client already owns it (it gives itself back to the pool after a
 * client-side timeout), and a second wrapper there would keep the connection from ever returning.
 * Outside a request nothing changes. A request cannot deadlock on its own turns: MikroORM never holds a
 * connection while it asks for another (a transaction runs every statement on the connection it holds).
 */
export function shareConnectionsPerRequest(pool: Pool): void {
  if (installed.has(pool)) return;
  installed.add(pool);
  /** Which request's turn each checked-out client holds. */
  const holders = new WeakMap<PoolClient, Turns>();
  pool.on('release', (_error: Error | undefined, client: PoolClient) => {
    const turns = holders.get(client);
    if (!turns) return;
    holders.delete(client);
    turns.give();
  });
  const connect = pool.connect.bind(pool) as () => Promise<PoolClient>;
  const checkout = async (): Promise<PoolClient> => {
    const turns = currentRequest.getStore();
    if (!turns) return connect();
    await turns.take();
    try {
      const client = await connect();
      holders.set(client, turns);
      return client;
    } catch (error) {
      turns.give();
      throw error;
    }
  };
  // pg-pool's callback form too, which its own `pool.query` uses: without it, that call never returned.
  const gated = (callback?: ConnectCallback): Promise<PoolClient> | undefined => {
    if (!callback) return checkout();
    checkout().then(
      (client) => callback(undefined, client, client.release),
      (error: Error) => callback(error, undefined, () => undefined),
    );
    return undefined;
  };
  pool.connect = gated as Pool['connect'];
}

/** Whether the code running now runs for a GraphQL request, whose checkouts take its turns. */
export function inGraphqlRequest(): boolean {
  return currentRequest.getStore() !== undefined;
}

/** Runs `fn` (a GraphQL request's handling) with at most `maxConnections` pool connections at a time. */
export function withConnectionShare<T>(maxConnections: number, fn: () => T): T {
  return currentRequest.run(new Turns(maxConnections), fn);
}
