import { AsyncResource } from 'node:async_hooks';
import type pg from 'pg';
import type { Logger } from '../../infra/logger.js';
import { PreparedStatement } from '../../infra/prepared-statement.js';
import { currentRoundTrips, type RoundTrips } from '../../infra/round-trips.js';
import { APPLY_PROVIDER_EVENT_FUNCTION } from './provider-event-function.js';

/** Notifications in one call at most; those left over go in the next. */
const MAX_BATCH = 50;

/** What `tollgate_apply_provider_event` answers for one notification (see provider-event-function.ts). */
export interface FirstStatementRow {
  readonly outcome: string;
  readonly pending: unknown;
}

/** A notification waiting for its first statement. */
interface Waiting {
  /** The arguments of `tollgate_apply_provider_event`, the Stripe subscription's id first. */
  readonly values: readonly unknown[];
  /** Its request's round trips, where the shared statement is noted. */
  readonly tally: RoundTrips | undefined;
  readonly resolve: (row: FirstStatementRow) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The Stripe receiver's first statement, shared by the notifications that arrive together.
 *
 * One call of `tollgate_apply_provider_events` (migrations/Migration20261127170000.ts) is in flight at a
 * time: a notification that arrives while none is goes at once, alone; those that arrive during a call
 * go together in the next. The function applies each in turn in one transaction and answers each its own
 * outcome. A burst of deliveries thus costs a round trip, a commit and its WAL flush per call, not per
 * notification, and a quiet receiver waits for nothing. Each request's access line counts the shared
 * call as its one statement; `tollgate_webhook_first_statement_notifications` shows how many each
 * call carried.
 *
 * - **Lock order.** A call takes its notifications in the order of their subscriptions, so two calls
 *   (two instances) lock rows in one order; within a subscription, in the order they arrived.
 * - **No notification holds up the others.** A call that waits over 50 ms for a lock (a row another
 *   transaction holds: the same-second path holds one while it reads Stripe) fails as a whole and
 *   writes nothing. Each of its notifications then makes the statement alone, as many at once as there
 *   are, and waits as long as it must, while the next call goes on without them. Any other failure of a
 *   call is handled the same way, so one bad notification fails only its own request.
 * - **Semantics.** Each notification's outcome is what the function answers alone: within the call,
 *   a later notification sees the earlier ones' changes as if they had committed first.
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
    /** Told how many notifications each call carried (1 for a notification alone), for the metrics. */
    private readonly observe: (size: number) => void = () => undefined,
    private readonly logger?: Logger,
  ) {}

  /** The first statement's answer for one notification. */
  apply(values: readonly unknown[]): Promise<FirstStatementRow> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ values, tally: currentRoundTrips(), resolve, reject });
      if (this.#flushing) return;
      this.#flushing = true;
      this.#scope.runInAsyncScope(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    try {
      while (this.#waiting.length > 0) await this.#call(this.#waiting.splice(0, MAX_BATCH));
    } finally {
      this.#flushing = false;
    }
  }

  /** One call for `batch`; never throws (each notification gets its answer or its error). */
  async #call(batch: Waiting[]): Promise<void> {
    this.observe(batch.length);
    for (const waiting of batch) if (waiting.tally) waiting.tally.statements++;
    batch.sort((a, b) => compare(String(a.values[0]), String(b.values[0])));
    let rows: FirstStatementRow[];
    try {
      rows = await APPLY_TOGETHER.runOnPool(await this.pool(), [JSON.stringify(batch.map((w) => w.values))]);
      if (rows.length !== batch.length)
        throw new Error(`${rows.length} answers for ${batch.length} notifications`);
    } catch (error) {
      // A lock wait past the bound is the expected case; anything else is worth a look.
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE)
        this.logger?.warn(
          { err: error, notifications: batch.length },
          'shared first statement failed; its Stripe notifications are applied one at a time',
        );
      // Each goes alone, without holding up the next call. A call that failed wrote nothing; one whose
      // answer was lost after its commit is safe to repeat (what it recorded is answered as a duplicate).
      for (const waiting of batch) void this.#alone(waiting);
      return;
    }
    for (const [i, waiting] of batch.entries()) waiting.resolve(rows[i]!);
  }

  /** The statement for one notification of a call that failed, with no bound on its lock waits. */
  async #alone(waiting: Waiting): Promise<void> {
    if (waiting.tally) waiting.tally.statements++;
    try {
      const [row] = await APPLY_ALONE.runOnPool(await this.pool(), waiting.values);
      if (!row) throw new Error(`${APPLY_PROVIDER_EVENT_FUNCTION} answered no row`);
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
const APPLY_ALONE = new PreparedStatement<FirstStatementRow>(
  'tollgate_apply_newer_provider_event',
  `select * from ${APPLY_PROVIDER_EVENT_FUNCTION}(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);

/** Several notifications' first statement: each element the argument list of the function above. */
const APPLY_TOGETHER = new PreparedStatement<FirstStatementRow>(
  'tollgate_apply_newer_provider_events',
  'select outcome, pending from tollgate_apply_provider_events(?::jsonb) order by n',
);
