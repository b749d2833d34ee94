import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { CacheObserver, FeedObserver } from '../telemetry/metrics.js';
import { CoalescedRuns } from './coalesced-runs.js';
import type { Logger } from './logger.js';
import { noteBarrier } from './round-trips.js';

/**
 * The channel every change trigger notifies (see modules/entitlements/entitlements-notify.ts). Triggers on
 * `subscription`, `plan`, `session`, `api_key`, `customer` and
 * `organization_member` send it from the writing transaction, so a
 * notice reaches every instance exactly when the change commits, and never for a rollback.
 */
export const CHANGES_CHANNEL = 'tollgate_changes';

const RECONNECT_DELAY_MS = 1_000;

/** Sends each of `$2` (text[]) as a notice on the channel `$1`, in one statement of its own. */
export const SEND_NOTICES_SQL = 'select pg_notify($1, payload) from unnest($2::text[]) as payload';

export interface ChangeFeedTimeouts {
  /**
   * The longest a reader waits for `synced()`. Past it the reader reads the database, and a round trip
   * or LISTEN still unanswered counts as a lost connection (the connection is closed, then reopened).
   */
  readonly timeoutMs: number;
  /** Opening the listening connection. */
  readonly connectTimeoutMs: number;
}

/** The defaults of CHANGE_FEED_TIMEOUT_MS and DATABASE_CONNECT_TIMEOUT_MS (src/config.ts). */
const DEFAULT_TIMEOUTS: ChangeFeedTimeouts = { timeoutMs: 1_000, connectTimeoutMs: 1_500 };

/**
 * A request that only reads takes one change-feed barrier for all its cached lookups: the first
 * `synced()` inside `oneBarrierPerRequest` makes the round trip, and every later one of the same request
 * shares its answer (the credential, the customer, the entitlements). That is as fresh as the request's
 * start, which is all a read can promise. A request that writes must not share one: the notices of its
 * own changes arrive after its writes, so each of its lookups takes a barrier of its own.
 */
const requestBarrier = new AsyncLocalStorage<{ synced?: Promise<boolean> }>();

/** Runs a read-only request's handling with one shared change-feed barrier (see above). */
export function oneBarrierPerRequest<T>(fn: () => T): T {
  return requestBarrier.run({}, fn);
}

/** What changed, as the triggers describe it. */
export type Change =
  | {
      readonly t: 'subscription';
      readonly app: string;
      readonly customer: string | null;
      readonly organization: string | null;
    }
  | { readonly t: 'plan'; readonly app: string }
  | { readonly t: 'session'; readonly id: string }
  | { readonly t: 'apiKey'; readonly id: string }
  | { readonly t: 'customer'; readonly id: string }
  | { readonly t: 'member'; readonly organization: string; readonly customer: string };

export interface ChangeListener {
  /** A committed change. */
  changed(change: Change): void;
  /** Notices may have been missed (connection lost or unreadable notice): forget everything. */
  reset(): void;
}

/**
 * Committed database changes, pushed by PostgreSQL `LISTEN/NOTIFY` on one dedicated connection per
 * process, for in-process caches that must never serve a value older than the reader's request.
 *
 * A notice travels asynchronously, so `synced()` makes a round trip on the listening connection:
 * PostgreSQL delivers every notification queued before a query's reply ahead of that reply, so once it
 * is back, every change committed before `synced()` was called has been handed to the listeners.
 * Concurrent callers share round trips. Without a working connection `synced()` answers false and the
 * caches read the database instead (fail-open to the source of truth, never to stale data); the
 * connection is retried on demand, at most once a second. Nothing connects until first used.
 *
 * Every wait is bounded (ChangeFeedTimeouts): on a frozen database `synced()` answers false in time, so
 * the reader goes on to the database, whose own timeouts turn the outage into a 503.
 */
export class ChangeFeed {
  readonly #listeners = new Set<ChangeListener>();
  readonly #channels = new Map<string, (payload: string) => void>();
  #client: pg.Client | undefined;
  #connecting: Promise<boolean> | undefined;
  #ready = false;
  #closed = false;
  #retryAt = 0;
  #version = 0;
  /** Barriers: one round trip at a time, shared by every caller that arrived before it was sent. */
  readonly #roundTrips = new CoalescedRuns(() => this.#roundTrip());
  /** Whether the last attempt to listen failed, so an outage is logged once, not at every retry. */
  #down = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly timeouts: ChangeFeedTimeouts = DEFAULT_TIMEOUTS,
    private readonly observer?: FeedObserver,
  ) {}

  listen(listener: ChangeListener): void {
    this.#listeners.add(listener);
  }

  /**
   * Hands every notice of another `channel` to `handler`, in the order PostgreSQL delivers them, as
   * they arrive: `synced()` covers them like the changes. Such notices move no `version` (the caches'
   * changes do not depend on them). Missed notices are signalled as for the changes, through `reset()`
   * of the listeners (`listen`). Meant to be registered before first use; a channel added later is
   * listened to from then on.
   */
  listenChannel(channel: string, handler: (payload: string) => void): void {
    this.#channels.set(channel, handler);
    const client = this.#client;
    if (client && this.#ready) {
      client.query(`listen ${channel}`).catch(() => this.#lost(client, 'listen failed'));
    }
  }

  /**
   * Moves on every notice and every connection change. Noted before a read, it tells whether anything
   * arrived while reading (`unchangedSince`), and a FeedCache which of its tags were named meanwhile, so a
   * value read before a change never outlives it.
   */
  get version(): number {
    return this.#version;
  }

  /** Whether changes are being received (when not, caches read the database). */
  get listening(): boolean {
    return this.#ready;
  }

  /**
   * Whether a value read from the database when the feed was at `version` is still as fresh as its read:
   * changes are being received and no notice or reconnection came since, so the notice of any later
   * change will reach whoever keeps it.
   */
  unchangedSince(version: number): boolean {
    return this.#ready && version === this.#version;
  }

  /**
   * True once every change committed before this call has been handed to the listeners; false when that
   * cannot be confirmed within the feed's timeout. A late confirmation is left to later callers.
   */
  synced(): Promise<boolean> {
    const request = requestBarrier.getStore();
    if (request === undefined) return this.#syncedNow();
    request.synced ??= this.#syncedNow();
    return request.synced;
  }

  /**
   * A barrier of its own, never the request's shared one (see `synced`): for a reader that has seen a
   * change committed after its request's barrier and needs its notice.
   */
  syncedNow(): Promise<boolean> {
    return this.#syncedNow();
  }

  async #syncedNow(): Promise<boolean> {
    if (this.#closed) return false;
    noteBarrier();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.timeouts.timeoutMs);
    });
    const started = performance.now();
    let confirmed = false;
    try {
      confirmed = await Promise.race([this.#sync(), expired]);
      return confirmed;
    } finally {
      clearTimeout(timer);
      this.observer?.synced((performance.now() - started) / 1000, confirmed);
    }
  }

  async #sync(): Promise<boolean> {
    if (!this.#ready && !(await this.#connect())) return false;
    return this.#roundTrips.next();
  }

  /**
   * Sends notices on the listening connection (a statement that is its own transaction, so its NOTIFY
   * waits for no WAL flush), sparing a pooled connection; false when not listening, and the caller
   * sends them another way.
   */
  async notify(channel: string, payloads: readonly string[]): Promise<boolean> {
    const client = this.#client;
    if (!client || !this.#ready) return false;
    try {
      await client.query({
        name: 'tollgate_notify',
        text: SEND_NOTICES_SQL,
        values: [channel, payloads],
      });
      return true;
    } catch {
      this.#lost(client, 'notify failed');
      return false;
    }
  }

  /** Stops listening; later reads go to the database. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#connecting;
    const client = this.#client;
    this.#client = undefined;
    this.#ready = false;
    this.#reset();
    await client?.end().catch(() => undefined);
  }

  async #roundTrip(): Promise<boolean> {
    const client = this.#client;
    if (!client || !this.#ready) return false;
    try {
      // An empty query is the cheapest round trip: nothing to parse or plan, yet PostgreSQL still hands
      // over every pending notification before it says it is ready again.
      await client.query('');
      return this.#ready && this.#client === client;
    } catch {
      this.#lost(client, 'round trip failed');
      return false;
    }
  }

  #connect(): Promise<boolean> {
    if (this.#closed || Date.now() < this.#retryAt) return Promise.resolve(false);
    this.#connecting ??= (async () => {
      const client = new pg.Client({
        connectionString: this.databaseUrl,
        connectionTimeoutMillis: this.timeouts.connectTimeoutMs,
        // pg gives up on a LISTEN or round trip after this; `#lost` then closes the connection.
        query_timeout: this.timeouts.timeoutMs,
        // Named so operators can tell it apart in pg_stat_activity.
        application_name: 'tollgate-changes',
      });
      client.on('error', () => this.#lost(client, 'connection error'));
      client.on('end', () => this.#lost(client, 'connection ended'));
      client.on('notification', (message) => {
        if (message.channel === CHANGES_CHANNEL) this.#apply(message.payload);
        else this.#channels.get(message.channel)?.(message.payload ?? '');
      });
      try {
        await client.connect();
        await client.query(`listen ${CHANGES_CHANNEL}`);
        for (const channel of this.#channels.keys()) await client.query(`listen ${channel}`);
      } catch (error) {
        this.#retryAt = Date.now() + RECONNECT_DELAY_MS;
        // An outage is expected to fail every retry: one line when it starts, no stack (nothing to debug).
        const fields = { reason: (error as Error).message };
        if (this.#down) this.logger.debug(fields, 'change feed: still cannot listen');
        else this.logger.warn(fields, 'change feed: cannot listen; caches read the database');
        this.#down = true;
        // Ending a client stuck in LISTEN destroys its socket; a frozen server would never say goodbye.
        client.end().catch(() => undefined);
        return false;
      }
      if (this.#closed) {
        await client.end().catch(() => undefined);
        return false;
      }
      this.#client = client;
      this.#reset();
      this.#ready = true;
      if (this.#down) this.logger.info('change feed: listening again');
      this.#down = false;
      return true;
    })().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  #lost(client: pg.Client, reason: string): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#ready = false;
    this.#reset();
    if (this.#closed) return;
    this.#retryAt = Date.now() + RECONNECT_DELAY_MS;
    this.logger.warn({ reason }, 'change feed: lost its connection; caches read the database');
    client.end().catch(() => undefined);
  }

  #apply(payload: string | undefined): void {
    this.#version++;
    let change: Change;
    try {
      change = JSON.parse(payload ?? '') as Change;
    } catch {
      this.#reset();
      return;
    }
    for (const listener of this.#listeners) listener.changed(change);
  }

  #reset(): void {
    this.#version++;
    for (const listener of this.#listeners) listener.reset();
  }
}

/** The tag a FeedCache puts on what it holds of customer `id` (see `customerChangeTags`). */
export function customerTag(id: string): string {
  return `customer:${id}`;
}

/** For a FeedCache of what customers are: a customer's change drops what was held of it. */
export function customerChangeTags(change: Change): readonly string[] {
  return change.t === 'customer' ? [customerTag(change.id)] : [];
}

/** Entries a FeedCache keeps before dropping its oldest. */
export const CACHE_MAX_ENTRIES = 10_000;

/** Tags whose latest change a FeedCache remembers (to judge the reads in flight) before forgetting them all. */
const MAX_TOUCHED_TAGS = 10_000;

/**
 * A bounded in-process cache over a ChangeFeed. Entries carry tags; a change drops every entry holding
 * one of the tags `tagsOf(change)` names. Reads wait for `feed.synced()`; without it they load.
 *
 * A value loaded from the database is kept unless a change naming one of its tags arrived while it
 * was read (it may predate that change), or notices may have been missed meanwhile. A change naming
 * other tags is no reason to drop it: kept before that change, the value would have stayed. So on an
 * instance that hears a steady stream of writes (other customers, other apps), reads are still kept.
 */
export class FeedCache<V> implements ChangeListener {
  readonly #entries = new Map<string, { readonly value: V; readonly tags: readonly string[] }>();
  readonly #byTag = new Map<string, Set<string>>();
  /** Per tag, the feed version its latest change moved the feed to: a read begun before it is not kept. */
  readonly #touched = new Map<string, number>();
  /** Reads begun before this feed version are not kept (after a reset, or once #touched was emptied). */
  #floor: number;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly tagsOf: (change: Change) => readonly string[],
    private readonly maxEntries = CACHE_MAX_ENTRIES,
    private readonly observer?: CacheObserver,
  ) {
    this.#floor = feed.version;
    feed.listen(this);
  }

  /**
   * The cached value for `key`, else `load()`'s result, stored when `keep` says so and it is safe to.
   * `synced` is the answer of a `feed.synced()` the caller made since its request began: one barrier
   * serves every cache a request reads (each would otherwise wait for a round trip of its own).
   */
  async get(
    key: string,
    load: () => Promise<V>,
    tags: (value: V) => readonly string[],
    keep: (value: V) => boolean = () => true,
    synced?: boolean,
  ): Promise<V> {
    if (!(synced ?? (await this.feed.synced()))) {
      this.observer?.('bypass');
      return load();
    }
    const hit = this.#entries.get(key);
    if (hit) {
      this.observer?.('hit');
      return hit.value;
    }
    this.observer?.('miss');
    return this.fill(key, load, tags, keep);
  }

  /**
   * `load()`'s result, stored under `key` when `keep` says so and it is safe to, without waiting for the
   * feed: a value loaded while no notice naming it arrived is as fresh as its read, and the notice of any
   * later change drops it. For a path that reads the database anyway.
   */
  async fill(
    key: string,
    load: () => Promise<V>,
    tags: (value: V) => readonly string[],
    keep: (value: V) => boolean = () => true,
  ): Promise<V> {
    const version = this.feed.version;
    const value = await load();
    if (keep(value)) {
      const held = tags(value);
      if (this.#freshSince(version, held)) this.#store(key, value, held);
    }
    return value;
  }

  /**
   * Stores `value`, read from the database by a statement that began when the feed's version was
   * `since`, if no notice naming it has arrived since (as `fill` does for a load of its own): for a path
   * that reads several values in one statement.
   */
  storeRead(key: string, value: V, tags: readonly string[], since: number): void {
    if (this.#freshSince(since, tags)) this.#store(key, value, tags);
  }

  /**
   * The cached value for `key`, if any, without waiting for the change feed: it may be stale by the
   * changes still on their way, so the caller must confirm it against the database before relying on it.
   */
  peek(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  changed(change: Change): void {
    const version = this.feed.version;
    for (const tag of this.tagsOf(change)) {
      this.#touched.set(tag, version);
      const keys = this.#byTag.get(tag);
      if (keys) for (const key of [...keys]) this.#delete(key);
    }
    if (this.#touched.size > MAX_TOUCHED_TAGS) {
      this.#touched.clear();
      this.#floor = version;
    }
  }

  reset(): void {
    this.#entries.clear();
    this.#byTag.clear();
    this.#touched.clear();
    this.#floor = this.feed.version;
  }

  /**
   * Whether a value holding `tags`, read from the database when the feed was at `since`, is as fresh as
   * its read: changes are being received, none was missed since, and none since named one of its tags.
   */
  #freshSince(since: number, tags: readonly string[]): boolean {
    if (!this.feed.listening || since < this.#floor) return false;
    for (const tag of tags) if ((this.#touched.get(tag) ?? since) > since) return false;
    return true;
  }

  #store(key: string, value: V, tags: readonly string[]): void {
    this.#delete(key);
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#delete(oldest.value);
    }
    this.#entries.set(key, { value, tags });
    for (const tag of tags) {
      const keys = this.#byTag.get(tag);
      if (keys) keys.add(key);
      else this.#byTag.set(tag, new Set([key]));
    }
  }

  #delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    for (const tag of entry.tags) {
      const keys = this.#byTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.#byTag.delete(tag);
    }
  }
}
