import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from './logger.js';

/**
 * A task run every `intervalMs` by whichever instance gets there first: each tick takes a PostgreSQL
 * session advisory lock with `pg_try_advisory_lock` on a connection of its own, runs the task only when
 * it got the lock, and releases it. Another instance ticking meanwhile skips its turn, so at most one
 * instance runs the task at a time; a crashed instance's lock goes with its connection.
 */
export class SingleInstanceSchedule {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(
    private readonly options: {
      /** Names the lock; every instance running the same task uses the same name. */
      readonly name: string;
      readonly connectionString: string;
      readonly intervalMs: number;
      readonly connectTimeoutMs: number;
      readonly logger: Logger;
      readonly task: () => Promise<void>;
    },
  ) {}

  /** Schedules the first run one interval from now; nothing happens for an interval of 0. */
  start(): void {
    if (this.options.intervalMs <= 0 || this.#stopped) return;
    this.#schedule();
  }

  /**
   * Runs the task now if no instance is running it; false when another one holds the lock. A failure
   * is thrown to the caller (the timer logs it and tries again at the next tick).
   */
  async runOnce(): Promise<boolean> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      connectionTimeoutMillis: this.options.connectTimeoutMs,
    });
    // A connection dropped mid-run is reported by the query in flight; the event alone must not crash us.
    client.on('error', () => undefined);
    try {
      await client.connect();
      const key = lockKey(this.options.name);
      const [row] = (
        await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [key])
      ).rows;
      if (!row?.locked) return false;
      try {
        await this.options.task();
      } finally {
        await client.query('select pg_advisory_unlock($1)', [key]).catch(() => undefined);
      }
      return true;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Stops the timer and waits for a run under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      this.#running = this.runOnce()
        .then((ran) => {
          if (!ran) this.options.logger.debug({ task: this.options.name }, 'another instance runs this task');
        })
        .catch((error: unknown) =>
          this.options.logger.error({ err: error, task: this.options.name }, 'scheduled task failed'),
        )
        .finally(() => {
          this.#running = undefined;
          if (!this.#stopped) this.#schedule();
        });
    }, this.options.intervalMs);
    // A pending tick never keeps the process alive on its own.
    this.#timer.unref();
  }
}

/** A stable signed 64-bit lock key from the task's name (PostgreSQL's advisory locks take a bigint). */
export function lockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}
