import type pg from 'pg';
import { type ChangeFeed, SEND_NOTICES_SQL } from '../../infra/change-feed.js';
import { CoalescedRuns } from '../../infra/coalesced-runs.js';
import type { Logger } from '../../infra/logger.js';
import { withPooledClient } from '../../infra/prepared-statement.js';
import type { CacheObserver } from '../../telemetry/metrics.js';
import { BALANCES_CHANNEL } from './balance-notices.js';
import type { Balance } from './ledger.js';

/**
 * The longest an instance keeps a balance. Notices keep it exact; this bounds what a notice cannot
 * reach: a consumption whose instance stopped between its commit and its notice, or a hand-written
 * UPDATE of a bucket's counters.
 */
export const BALANCE_MAX_AGE_MS = 5_000;

/** Balances an instance keeps before dropping its oldest. */
const MAX_ENTRIES = 10_000;

/** A notice's payload stays under PostgreSQL's 8 000 bytes. */
const MAX_NOTICE_BYTES = 7_000;

interface Entry {
  readonly subjectId: string;
  readonly balances: readonly Balance[];
  /** Real time (performance.now) after which the entry is not served. */
  readonly staleAt: number;
  /** The clock's time it was read at, and the first at which one of its grants expires. */
  readonly readAt: number;
  readonly expiresAt: number | null;
}

/**
 * Live balances kept in memory, so a metered check costs no database round trip. A balance is served
 * only after the request's change-feed barrier, which hands over every notice committed (or, for
 * consumptions, sent) before the request began, and never past the earliest expiry of a grant it
 * counts; a notice naming the subject drops its balances. A read that a notice overtook is not kept.
 */
export class BalanceCache {
  readonly #entries = new Map<string, Entry>();
  readonly #bySubject = new Map<string, Set<string>>();
  /** Per subject, the notice count at its latest notice: a read begun before it is not kept. */
  readonly #touched = new Map<string, number>();
  /** Reads begun before this count are not kept (after a reset, or when #touched was emptied). */
  #floor = 0;
  #notices = 0;
  #pending = new Set<string>();
  /**
   * One statement in flight at a time: what arrives meanwhile goes in the next, so under load one
   * statement carries the notices of many consumptions.
   */
  readonly #sends = new CoalescedRuns(() => this.#send());

  constructor(
    private readonly feed: ChangeFeed,
    private readonly pool: () => Promise<pg.Pool>,
    private readonly logger: Logger,
    private readonly observer?: CacheObserver,
  ) {
    // Notices may have been missed (the listening connection was lost): nothing kept can be trusted.
    feed.listen({ changed: () => undefined, reset: () => this.#reset() });
    feed.listenChannel(BALANCES_CHANNEL, (payload) => {
      for (const id of payload.split(' ')) if (id !== '') this.#drop(id);
    });
  }

  /**
   * The balances under `key` (a subject and the meters read), else `load()`'s, kept when no notice about
   * the subject arrived while loading. `now`: the clock's time of the read.
   */
  async get(
    subjectId: string,
    key: string,
    now: number,
    load: () => Promise<{ balances: Balance[]; expiresAt: number | null }>,
  ): Promise<readonly Balance[]> {
    if (!(await this.feed.synced())) {
      this.observer?.('bypass');
      return (await load()).balances;
    }
    const hit = this.#entries.get(key);
    if (hit && performance.now() < hit.staleAt && now >= hit.readAt && (hit.expiresAt ?? Infinity) > now) {
      this.observer?.('hit');
      return hit.balances;
    }
    this.observer?.('miss');
    const started = this.#notices;
    const read = await load();
    if (this.feed.listening && started >= this.#floor && (this.#touched.get(subjectId) ?? 0) <= started) {
      this.#store(key, {
        subjectId,
        balances: Object.freeze(read.balances.map((b) => Object.freeze(b))),
        staleAt: performance.now() + BALANCE_MAX_AGE_MS,
        readAt: now,
        expiresAt: read.expiresAt,
      });
    }
    return read.balances;
  }

  /**
   * A committed change of the subject's counters (a consumption, a refund): its balances are dropped
   * here at once and on every other instance by a notice sent before this resolves. Changes of several
   * requests share one statement. A notice that cannot be sent is logged, not thrown: the change is
   * committed, and BALANCE_MAX_AGE_MS bounds what other instances keep.
   */
  changed(subjectId: string): Promise<void> {
    this.#drop(subjectId);
    this.#pending.add(subjectId);
    return this.#sends.next();
  }

  #reset(): void {
    this.#entries.clear();
    this.#bySubject.clear();
    this.#touched.clear();
    this.#floor = ++this.#notices;
  }

  async #send(): Promise<void> {
    // Those of the same turn of the event loop go together.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const ids = [...this.#pending];
    if (ids.length === 0) return;
    this.#pending = new Set();
    const payloads: string[] = [];
    let payload = '';
    for (const id of ids) {
      if (payload.length + id.length + 1 > MAX_NOTICE_BYTES) {
        payloads.push(payload);
        payload = '';
      }
      payload = payload === '' ? id : `${payload} ${id}`;
    }
    payloads.push(payload);
    try {
      if (await this.feed.notify(BALANCES_CHANNEL, payloads)) return;
      await withPooledClient(await this.pool(), (client) =>
        client.query({
          name: 'tollgate_notify',
          text: SEND_NOTICES_SQL,
          values: [BALANCES_CHANNEL, payloads],
        }),
      );
    } catch (error) {
      this.logger.warn(
        { reason: (error as Error).message, subjects: ids.length },
        'balance notices not sent; other instances keep those balances at most a few seconds',
      );
    }
  }

  #drop(subjectId: string): void {
    this.#touched.set(subjectId, ++this.#notices);
    if (this.#touched.size > MAX_ENTRIES) {
      this.#touched.clear();
      this.#floor = this.#notices;
    }
    const keys = this.#bySubject.get(subjectId);
    if (!keys) return;
    for (const key of keys) this.#entries.delete(key);
    this.#bySubject.delete(subjectId);
  }

  #store(key: string, entry: Entry): void {
    if (this.#entries.size >= MAX_ENTRIES && !this.#entries.has(key)) {
      const [oldest, old] = this.#entries.entries().next().value!;
      this.#entries.delete(oldest);
      const keys = this.#bySubject.get(old.subjectId);
      keys?.delete(oldest);
      if (keys?.size === 0) this.#bySubject.delete(old.subjectId);
    }
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    const keys = this.#bySubject.get(entry.subjectId);
    if (keys) keys.add(key);
    else this.#bySubject.set(entry.subjectId, new Set([key]));
  }
}
