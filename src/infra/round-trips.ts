import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What one request waited for from PostgreSQL: statements sent on the pool's connections (BEGIN and
 * COMMIT included, each is a round trip) and change-feed barriers (a round trip on the listening
 * connection, see change-feed.ts). The access log shows both for every request (`db`), so the cost of a
 * path can be read off its log line, and tests hold the hot paths to their counts.
 */
export interface RoundTrips {
  statements: number;
  barriers: number;
}

const current = new AsyncLocalStorage<RoundTrips>();

/** Runs `fn` with every statement and barrier it causes counted in `tally`. */
export function countRoundTrips<T>(tally: RoundTrips, fn: () => T): T {
  return current.run(tally, fn);
}

/**
 * The tally of the request the current code runs for, if any: a statement made for several requests at
 * once, outside their contexts, is noted in each of theirs.
 */
export function currentRoundTrips(): RoundTrips | undefined {
  return current.getStore();
}

/** A statement is about to be sent for the current request, if any. */
export function noteStatement(): void {
  const tally = current.getStore();
  if (tally) tally.statements++;
}

/** The current request, if any, waits for a change-feed barrier. */
export function noteBarrier(): void {
  const tally = current.getStore();
  if (tally) tally.barriers++;
}
