import { AsyncResource } from 'node:async_hooks';
import type pg from 'pg';
import type { Logger } from '../../infra/logger.js';
import { PreparedStatement } from '../../infra/prepared-statement.js';
import { currentRoundTrips, type RoundTrips } from '../../infra/round-trips.js';
import { APPLY_PROVIDER_CHANGE_FUNCTION } from './provider-change-function.js';
import { APPLY_PROVIDER_EVENT_FUNCTION } from './provider-event-function.js';

/** Statements in one call at most; those left over go in the next. */
const MAX_BATCH = 50;

/**
 * What `tollgate_apply_provider_event` answers for a first statement (see provider-event-function.ts),
 * and `tollgate_apply_provider_change` for a change (provider-change-function.ts).
 */
export interface StatementRow {
  readonly outcome: string;
  readonly pending: unknown;
}

/** A notification's statement, waiting for its call. */
interface Waiting {
  /** The Stripe subscription's id: a call takes its statements in this order. */
  readonly key: string;
  /**
   * The call's element: the argument list of `tollgate_apply_provider_event` (a first statement), or the
   * argument of `tollgate_apply_provider_change` (a change, an object).
   */
  readonly element: readonly unknown[] | Readonly<Record<string, unknown>>;
  /** Its request's round trips, where the shared statement is noted. */
  readonly tally: RoundTrips | undefined;
  readonly resolve: (row: StatementRow) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The Stripe receiver's statements, shared by the notifications that arrive together: the first
 * statement of each, and the change of those that it answered 'pending' (a newer event that moves the
 * MRR and whose count needs the row: its movements and outbound events are worked out here, between the
 * two).
 *
 * One call of `tollgate_apply_provider_events` (migrations/Migration20261127200000.ts) is in flight at a
 * time: a statement that comes while none is goes at once, alone; those that come during a call go
 * together in the next. The function makes each in turn in one transaction and answers each its own
 * outcome. A burst of deliveries thus costs a round trip, a commit and its WAL flush per call, not per
 * statement, and a quiet receiver waits for nothing. Each request's access line counts each shared call
 * its statement went in; `tollgate_webhook_statements_per_call` shows how many each call carried.
 *
 * - **Lock order.** A call takes its statements in the order of their subscriptions, so two calls (two
 *   instances) lock rows in one order; within a subscription, in the order they came.
 * - **No notification holds up the others.** A call that waits over 50 ms for a lock (a row another
 *   transaction holds: the same-second path holds one while it reads Stripe) fails as a whole and
 *   writes nothing. Each of its statements is then made alone, as many at once as there are, and waits
 *   as long as it must, while the next call goes on without them. Any other failure of a call is handled
 *   the same way, so one bad notification fails only its own request.
 * - **Semantics.** Each statement's outcome is what its function answers alone: within the call, a later
 *   statement sees the earlier ones' changes as if they had committed first. A change checks the row's
 *   version, so one whose row an earlier statement of the call changed is answered 'raced'.
 */
export class ProviderEventBatches {
  readonly #waiting: Waiting[] = [];
  #flushing = false;
  /**
   * Where the calls run: the context this was made in (start-up), not that of the request that happened
   * to start them, as they run for every waiting request.
   */
  readonly #scope = new AsyncResource('ProviderEventBatches');

  constructor(
    private readonly pool: () => Promise<pg.Pool>,
    /** Told how many statements each call carried (1 for a statement alone), for the metrics. */
    private readonly observe: (size: number) => void = () => undefined,
    private readonly logger?: Logger,
  ) {}

  /** The first statement's answer for one notification: `values` as `tollgate_apply_provider_event` takes them. */
  apply(values: readonly unknown[]): Promise<StatementRow> {
    return this.#enqueue(String(values[0]), values);
  }

  /**
   * The answer of `tollgate_apply_provider_change` for `change`, a change of the Stripe subscription
   * `subscription`.
   */
  applyChange(subscription: string, change: Readonly<Record<string, unknown>>): Promise<StatementRow> {
    return this.#enqueue(subscription, change);
  }

  #enqueue(key: string, element: Waiting['element']): Promise<StatementRow> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ key, element, tally: currentRoundTrips(), resolve, reject });
      if (this.#flushing) return;
      this.#flushing = true;
      this.#scope.runInAsyncScope(() => void this.#flush());
    });
  }

  /**
   * Makes calls while statements wait, on one connection taken for the run of them: the next call goes
   * out as soon as the last one answers. Taken from the pool for each call, it came a turn of the event
   * loop later (pg-pool hands over an idle connection on the next tick), after every request the last
   * call answered had run on to its response.
   */
  async #flush(): Promise<void> {
    let client: pg.PoolClient | undefined;
    try {
      while (this.#waiting.length > 0) {
        try {
          client ??= await (await this.pool()).connect();
        } catch {
          // No connection now: each statement of the batch tries on its own, and fails on its own.
          for (const waiting of this.#waiting.splice(0, MAX_BATCH)) void this.#alone(waiting);
          continue;
        }
        if (!(await this.#call(client, this.#waiting.splice(0, MAX_BATCH)))) {
          // After a failed call: the connection is in no transaction, or gave itself back if it died.
          client.release();
          client = undefined;
        }
      }
    } finally {
      client?.release();
      this.#flushing = false;
    }
  }

  /**
   * One call for `batch` on `client`; never throws (each statement gets its answer or its error).
   * False when the call failed.
   */
  async #call(client: pg.PoolClient, batch: Waiting[]): Promise<boolean> {
    this.observe(batch.length);
    for (const waiting of batch) if (waiting.tally) waiting.tally.statements++;
    // Stable: a subscription's statements stay in the order they came.
    batch.sort((a, b) => compare(a.key, b.key));
    let rows: StatementRow[];
    try {
      rows = await APPLY_TOGETHER.runOnClient(client, [JSON.stringify(batch.map((w) => w.element))]);
      if (rows.length !== batch.length)
        throw new Error(`${rows.length} answers for ${batch.length} statements`);
    } catch (error) {
      // A lock wait past the bound is the expected case; anything else is worth a look.
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE)
        this.logger?.warn(
          { err: error, statements: batch.length },
          "shared statement failed; its Stripe notifications' statements are made one at a time",
        );
      // Each goes alone, without holding up the next call. A call that failed wrote nothing; one whose
      // answer was lost after its commit is safe to repeat (a first statement is answered as a
      // duplicate, a change as raced, and its caller then reads the row again).
      for (const waiting of batch) void this.#alone(waiting);
      return false;
    }
    for (const [i, waiting] of batch.entries()) waiting.resolve(rows[i]!);
    return true;
  }

  /** The statement of a call that failed, alone, with no bound on its lock waits. */
  async #alone(waiting: Waiting): Promise<void> {
    if (waiting.tally) waiting.tally.statements++;
    try {
      const pool = await this.pool();
      const [row] = Array.isArray(waiting.element)
        ? await APPLY_ALONE.runOnPool(pool, waiting.element)
        : await APPLY_CHANGE_ALONE.runOnPool(pool, [JSON.stringify(waiting.element)]);
      if (!row) throw new Error("the Stripe receiver's function answered no row");
      waiting.resolve(row);
    } catch (error) {
      waiting.reject(error);
    }
  }
}

/** PostgreSQL's error code for a lock not taken within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** One notification's first statement, as the function's own call. */
const APPLY_ALONE = new PreparedStatement<StatementRow>(
  'tollgate_apply_newer_provider_event',
  `select * from ${APPLY_PROVIDER_EVENT_FUNCTION}(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb)`,
);

/** One notification's change, as the function's own call. */
const APPLY_CHANGE_ALONE = new PreparedStatement<StatementRow>(
  'tollgate_apply_provider_change',
  `select * from ${APPLY_PROVIDER_CHANGE_FUNCTION}(?::jsonb)`,
);

/** Several notifications' statements: each element the argument(s) of one of the functions above. */
const APPLY_TOGETHER = new PreparedStatement<StatementRow>(
  'tollgate_apply_newer_provider_events',
  'select outcome, pending from tollgate_apply_provider_events(?::jsonb) order by n',
);
