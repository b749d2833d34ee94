import type { EntityManager } from '@mikro-orm/core';
import type pg from 'pg';
import { inTransaction } from './unit-of-work.js';

/**
 * A statement of a hot path, run outside any transaction as a named prepared statement on a connection
 * of the pool under the ORM.
 *
 * MikroORM's `execute` writes the parameters into the SQL text, so PostgreSQL parses and plans every
 * call of a statement from scratch; for the large single-statement CTEs of the hot paths that planning
 * costs more than running them (`bench/webhook-ingestion.js`: the Stripe receiver's throughput against
 * the raw baseline went from 0.26–0.31 to 0.47 when its statement became a prepared one). A prepared
 * statement is parsed once per connection and PostgreSQL may keep its plan.
 *
 * The SQL is written with `?` placeholders like the rest of the code base (none may stand for anything
 * else: no `?` operators of jsonb); each becomes `$1`, `$2`, … in order.
 */
export class PreparedStatement<Row extends object> {
  readonly #name: string;
  readonly #text: string;

  constructor(name: string, sql: string) {
    let n = 0;
    this.#name = name;
    this.#text = sql.replace(/\?/g, () => `$${++n}`);
  }

  /** The rows the statement returns; it commits on its own (autocommit). */
  async run(em: EntityManager, values: readonly unknown[]): Promise<Row[]> {
    if (inTransaction(em)) {
      throw new Error(`${this.#name} runs on its own connection, outside the caller's transaction`);
    }
    return this.runOnPool((await em.getConnection().getNativeClient()) as pg.Pool, values);
  }

  /** As `run`, on a connection of `pool` (the ORM's, taken once by a caller that has no EntityManager). */
  async runOnPool(pool: pg.Pool, values: readonly unknown[]): Promise<Row[]> {
    return withPooledClient(pool, (client) => this.runOnClient(client, values));
  }

  /** As `run`, on a connection the caller holds (outside any transaction). */
  async runOnClient(client: pg.PoolClient, values: readonly unknown[]): Promise<Row[]> {
    const result = await client.query<Row>({ name: this.#name, text: this.#text, values: [...values] });
    return result.rows;
  }
}

/**
 * Runs `fn` on a client lent by the pool, outside the ORM's unit of work (a hot path's prepared
 * statements, each its own transaction), and gives the client back.
 */
export async function withPooledClient<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  // The promise form: the pool's `connect` is wrapped per request (src/graphql/connection-share.ts).
  const client = await pool.connect();
  try {
    return await fn(client);
  } finally {
    // A connection that failed or timed out under a statement has given itself back already
    // (src/db.ts), and this release is then a no-op; after a statement that merely failed, the
    // connection is in no transaction and is fit for the next borrower.
    client.release();
  }
}
