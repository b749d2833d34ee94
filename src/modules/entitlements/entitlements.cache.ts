import pg from 'pg';
import type { Logger } from '../../core/logger.js';
import { ENTITLEMENTS_CHANNEL } from './entitlements-notify.js';

/** Whose entitlements: a customer's own, or an organization's (shared by its members). */
export type EntitlementContext =
  | { readonly appId: string; readonly customerId: string; readonly organizationId?: undefined }
  | { readonly appId: string; readonly organizationId: string; readonly customerId?: undefined };

const RECONNECT_DELAY_MS = 1_000;
/** A round trip slower than this counts as a lost connection (reads then go to the database). */
const ROUND_TRIP_TIMEOUT_MS = 2_000;

function keyOf(appId: string, kind: 'c' | 'o', id: string): string {
  return `${appId}|${kind}|${id}`;
}

export function contextKey(context: EntitlementContext): string {
  return context.organizationId !== undefined
    ? keyOf(context.appId, 'o', context.organizationId)
    : keyOf(context.appId, 'c', context.customerId);
}

interface Notice {
  readonly app?: unknown;
  readonly customer?: unknown;
  readonly organization?: unknown;
}

/**
 * An in-process cache of resolved values (entitlements) keyed by context, kept exact across instances.
 *
 * Every write to `subscription` and `plan` notifies `tollgate_entitlements` from a trigger when it commits
 * (see entitlements-notify.ts); this cache LISTENs on its own connection and drops what a notice names.
 * A notice travels asynchronously, so before answering from memory a read waits for a round trip on the
 * listening connection: PostgreSQL delivers every notification queued before a query's reply ahead of
 * that reply, so once the round trip is back, every change committed before the read began has been
 * applied here. Concurrent reads share one round trip. A fill is stored only if no notice arrived while
 * it was loading, so a value read before a change can never outlive the change's notice.
 *
 * Without a working listening connection nothing is cached and every read loads (fail-open to the
 * database, never to stale data); the connection is retried at most once a second, on demand.
 */
export class NotifiedCache<V> {
  readonly #entries = new Map<string, { readonly appId: string; readonly value: V }>();
  #client: pg.Client | undefined;
  #connecting: Promise<boolean> | undefined;
  #ready = false;
  #closed = false;
  #retryAt = 0;
  /** Bumped by every notice and every connection change; a fill that saw it move is not stored. */
  #version = 0;
  #inFlight: Promise<boolean> | undefined;
  #queued: Promise<boolean> | undefined;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly maxEntries = 10_000,
  ) {}

  /** The cached value of `context`, or `load()`'s result (stored when it is safe to). */
  async get(context: EntitlementContext, load: () => Promise<V>): Promise<V> {
    if (!(await this.#synced())) return load();
    const key = contextKey(context);
    const hit = this.#entries.get(key);
    if (hit) return hit.value;
    const version = this.#version;
    const value = await load();
    if (this.#ready && version === this.#version) {
      if (this.#entries.size >= this.maxEntries) {
        const oldest = this.#entries.keys().next();
        if (!oldest.done) this.#entries.delete(oldest.value);
      }
      this.#entries.set(key, { appId: context.appId, value });
    }
    return value;
  }

  /** Whether changes are being received (else every read goes to the database). */
  get listening(): boolean {
    return this.#ready;
  }

  /** Stops listening; later reads go to the database. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#connecting;
    const client = this.#client;
    this.#client = undefined;
    this.#ready = false;
    this.#invalidateAll();
    await client?.end().catch(() => undefined);
  }

  /** True once every notification committed before this call has been applied. */
  async #synced(): Promise<boolean> {
    if (this.#closed) return false;
    if (!this.#ready && !(await this.#connect())) return false;
    return this.#barrier();
  }

  /**
   * Shares round trips: a caller arriving while one is in flight cannot rely on it (it was sent before the
   * caller's moment), so it waits for the next one, which every such caller shares.
   */
  #barrier(): Promise<boolean> {
    if (!this.#inFlight) {
      this.#inFlight = this.#roundTrip().finally(() => {
        this.#inFlight = undefined;
      });
      return this.#inFlight;
    }
    this.#queued ??= this.#inFlight.then(() => {
      this.#queued = undefined;
      return this.#barrier();
    });
    return this.#queued;
  }

  async #roundTrip(): Promise<boolean> {
    const client = this.#client;
    if (!client || !this.#ready) return false;
    try {
      await client.query('select 1');
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
        query_timeout: ROUND_TRIP_TIMEOUT_MS,
        // Named so operators can tell it apart in pg_stat_activity.
        application_name: 'tollgate-entitlements',
      });
      client.on('error', () => this.#lost(client, 'connection error'));
      client.on('end', () => this.#lost(client, 'connection ended'));
      client.on('notification', (message) => {
        if (message.channel === ENTITLEMENTS_CHANNEL) this.#apply(message.payload);
      });
      try {
        await client.connect();
        await client.query(`listen ${ENTITLEMENTS_CHANNEL}`);
      } catch (error) {
        this.#retryAt = Date.now() + RECONNECT_DELAY_MS;
        this.logger.warn(
          { err: error },
          'entitlement cache: cannot listen for changes; reading from the database',
        );
        await client.end().catch(() => undefined);
        return false;
      }
      if (this.#closed) {
        await client.end().catch(() => undefined);
        return false;
      }
      this.#client = client;
      this.#version++;
      this.#ready = true;
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
    this.#invalidateAll();
    if (this.#closed) return;
    this.#retryAt = Date.now() + RECONNECT_DELAY_MS;
    this.logger.warn(
      { reason },
      'entitlement cache: lost its listening connection; reading from the database',
    );
    client.end().catch(() => undefined);
  }

  #apply(payload: string | undefined): void {
    this.#version++;
    let notice: Notice;
    try {
      notice = JSON.parse(payload ?? '') as Notice;
    } catch {
      this.#invalidateAll();
      return;
    }
    if (typeof notice.app !== 'string') {
      this.#invalidateAll();
      return;
    }
    const { app, customer, organization } = notice;
    if (customer === undefined && organization === undefined) {
      for (const [key, entry] of this.#entries) if (entry.appId === app) this.#entries.delete(key);
      return;
    }
    if (typeof customer === 'string') this.#entries.delete(keyOf(app, 'c', customer));
    if (typeof organization === 'string') this.#entries.delete(keyOf(app, 'o', organization));
  }

  #invalidateAll(): void {
    this.#version++;
    this.#entries.clear();
  }
}
