import type { Store as FieldStore, Identity } from 'graphql-rate-limit';
import { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { Logger } from '../../infra/logger.js';

/** A named budget: `points` requests per `windowSeconds`, counted per key. */
export interface RateLimitRule {
  readonly name: string;
  readonly points: number;
  readonly windowSeconds: number;
}

export interface RateLimitOutcome {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the key's window ends and its count starts again from zero. */
  readonly msBeforeReset: number;
}

/**
 * Where request counts live: one process (memory) or shared by every instance (Redis). A store never
 * throws because it is unavailable: it logs and keeps serving (fail open), since refusing every request
 * when the counter store is down would turn a Redis outage into a Tollgate outage.
 */
export interface RateLimitStore {
  /** Counts one request of `key` against `rule`. Exactly `rule.points` requests per window are allowed. */
  consume(rule: RateLimitRule, key: string): Promise<RateLimitOutcome>;
  /** The same backend in the shape graphql-rate-limit expects, for per-field GraphQL limits. */
  readonly fieldStore: FieldStore;
  close(): Promise<void>;
}

export interface RateLimitStoreOptions {
  /** Redis connection URL; without it counts are kept in this process. */
  readonly redisUrl?: string;
  /** Prefix of every key, so several deployments (or test runs) can share one Redis. */
  readonly keyPrefix: string;
  readonly logger: Logger;
}

/** Creates the store for this process; with Redis, waits (briefly) for the connection before serving. */
export async function createRateLimitStore(options: RateLimitStoreOptions): Promise<RateLimitStore> {
  if (!options.redisUrl) return new MemoryRateLimitStore(options.keyPrefix);
  const store = new RedisRateLimitStore(options.redisUrl, options.keyPrefix, options.logger);
  await store.connect();
  return store;
}

function outcomeOf(rule: RateLimitRule, res: RateLimiterRes, allowed: boolean): RateLimitOutcome {
  return {
    allowed,
    limit: rule.points,
    remaining: allowed ? res.remainingPoints : 0,
    msBeforeReset: Math.max(0, res.msBeforeNext),
  };
}

/** Runs `consume` and turns rate-limiter-flexible's rejection (a RateLimiterRes) into an outcome. */
async function consumeWith(limiter: RateLimiterAbstract, rule: RateLimitRule, key: string) {
  try {
    return outcomeOf(rule, await limiter.consume(key), true);
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return outcomeOf(rule, rejection, false);
    throw rejection;
  }
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly fieldStore: FieldStore = new MemoryFieldStore();
  readonly #limiters = new Map<string, RateLimiterMemory>();

  constructor(private readonly keyPrefix: string) {}

  consume(rule: RateLimitRule, key: string): Promise<RateLimitOutcome> {
    const id = `${rule.name}:${rule.points}:${rule.windowSeconds}`;
    let limiter = this.#limiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterMemory({
        keyPrefix: `${this.keyPrefix}:${rule.name}`,
        points: rule.points,
        duration: rule.windowSeconds,
      });
      this.#limiters.set(id, limiter);
    }
    return consumeWith(limiter, rule, key);
  }

  async close(): Promise<void> {}
}

/** graphql-rate-limit's call log per identity, kept in this process and dropped when its window ends. */
class MemoryFieldStore implements FieldStore {
  readonly #entries = new Map<string, { timestamps: readonly number[]; expiresAt: number }>();

  setForIdentity(identity: Identity, timestamps: readonly number[], windowMs = 60_000): void {
    const now = Date.now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
    this.#entries.set(fieldKey(identity), { timestamps: [...timestamps], expiresAt: now + windowMs });
  }

  getForIdentity(identity: Identity): readonly number[] {
    const entry = this.#entries.get(fieldKey(identity));
    return entry && entry.expiresAt > Date.now() ? entry.timestamps : [];
  }
}

function fieldKey(identity: Identity): string {
  return `${identity.contextIdentity}:${identity.fieldIdentity}`;
}

/** How often a continuing store failure is logged again (the first failure is logged at once). */
const FAILURE_LOG_INTERVAL_MS = 30_000;

/** How long a Redis command may take before the store gives up on it (and on Redis, see below). */
const COMMAND_TIMEOUT_MS = 1000;

/** How often, while Redis is given up on, a background PING checks whether it answers again. */
export const PROBE_INTERVAL_MS = 1000;

/**
 * Counts in Redis so every instance shares one budget. Commands are not queued while Redis is away and
 * time out quickly. A circuit breaker keeps a Redis that stops answering (a hung process, a dropped
 * network) from costing every request the command timeout: after the first failed command, requests are
 * counted by an in-process fallback store, and a background PING every `PROBE_INTERVAL_MS` (one at a
 * time) decides when Redis is used again. So a hung Redis costs the requests in flight at its first
 * timeout, and none after. Failures are logged, at most every `FAILURE_LOG_INTERVAL_MS`.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly fieldStore: FieldStore;
  readonly #redis: Redis;
  readonly #limiters = new Map<string, RateLimiterRedis>();
  readonly #fallback: MemoryRateLimitStore;
  #lastFailureLog = 0;
  #failing = false;
  /** Whether Redis is given up on until a probe answers (the circuit is open). */
  #open = false;
  #probe: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    url: string,
    private readonly keyPrefix: string,
    private readonly logger: Logger,
  ) {
    this.#redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 5000),
    });
    this.#redis.on('error', (error) => this.reportFailure(error));
    this.#fallback = new MemoryRateLimitStore(keyPrefix);
    this.fieldStore = new RedisFieldStore(
      this.#redis,
      `${keyPrefix}:field`,
      this.#fallback.fieldStore,
      () => this.#open,
      (e) => this.reportFailure(e),
    );
  }

  /** Whether requests are counted in this process because Redis failed (for tests and metrics). */
  get usingFallback(): boolean {
    return this.#open;
  }

  async connect(): Promise<void> {
    try {
      await this.#redis.connect();
    } catch (error) {
      // Start anyway: ioredis keeps reconnecting, and requests are served from the fallback meanwhile.
      this.reportFailure(error);
    }
  }

  async consume(rule: RateLimitRule, key: string): Promise<RateLimitOutcome> {
    if (this.#open) return this.#fallback.consume(rule, key);
    try {
      return await consumeWith(this.limiterFor(rule), rule, key);
    } catch (error) {
      this.reportFailure(error);
      return this.#fallback.consume(rule, key);
    }
  }

  private limiterFor(rule: RateLimitRule): RateLimiterRedis {
    const id = `${rule.name}:${rule.points}:${rule.windowSeconds}`;
    let limiter = this.#limiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: this.#redis,
        keyPrefix: `${this.keyPrefix}:${rule.name}`,
        points: rule.points,
        duration: rule.windowSeconds,
        rejectIfRedisNotReady: true,
      });
      this.#limiters.set(id, limiter);
    }
    return limiter;
  }

  /** Opens the circuit (if it is not yet) and logs, at most every `FAILURE_LOG_INTERVAL_MS`. */
  private reportFailure(error: unknown): void {
    this.openCircuit();
    const now = Date.now();
    if (this.#failing && now - this.#lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
    this.#failing = true;
    this.#lastFailureLog = now;
    this.logger.error(
      { err: error },
      'rate-limit store: Redis unavailable, counting in this process until it is back (requests are still served)',
    );
  }

  private openCircuit(): void {
    if (this.#open || this.#closed) return;
    this.#open = true;
    this.scheduleProbe();
  }

  /** One PING after `PROBE_INTERVAL_MS`; an answer closes the circuit, a failure schedules the next. */
  private scheduleProbe(): void {
    this.#probe = setTimeout(async () => {
      this.#probe = undefined;
      let answered = false;
      try {
        answered = this.#redis.status === 'ready' && (await this.#redis.ping()) === 'PONG';
      } catch {
        answered = false;
      }
      if (this.#closed) return;
      if (!answered) return this.scheduleProbe();
      this.#open = false;
      if (this.#failing) this.logger.info('rate-limit store: Redis reachable again, counting there');
      this.#failing = false;
    }, PROBE_INTERVAL_MS);
    this.#probe.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#probe) clearTimeout(this.#probe);
    this.#redis.disconnect();
  }
}

/** graphql-rate-limit's call log per identity as a JSON list in Redis, expiring with its window. */
class RedisFieldStore implements FieldStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly fallback: FieldStore,
    private readonly usingFallback: () => boolean,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  async setForIdentity(identity: Identity, timestamps: readonly number[], windowMs = 60_000): Promise<void> {
    if (this.usingFallback()) return this.fallback.setForIdentity(identity, timestamps, windowMs);
    try {
      await this.redis.set(
        `${this.prefix}:${fieldKey(identity)}`,
        JSON.stringify(timestamps),
        'PX',
        windowMs,
      );
    } catch (error) {
      this.onFailure(error);
      await this.fallback.setForIdentity(identity, timestamps, windowMs);
    }
  }

  async getForIdentity(identity: Identity): Promise<readonly number[]> {
    if (this.usingFallback()) return this.fallback.getForIdentity(identity);
    try {
      const stored = await this.redis.get(`${this.prefix}:${fieldKey(identity)}`);
      return stored ? (JSON.parse(stored) as number[]) : [];
    } catch (error) {
      this.onFailure(error);
      return this.fallback.getForIdentity(identity);
    }
  }
}
