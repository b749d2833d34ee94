import type { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** How a cached read went: served from the cache, loaded and cached, or read past an unsynced cache. */
export type CacheLookup = 'hit' | 'miss' | 'bypass';

/** What the caches and the change feed report (src/infra/change-feed.ts); no Prometheus type leaks there. */
export interface FeedObserver {
  /** A `synced()` wait ended: how long it took, and whether freshness was confirmed. */
  synced(seconds: number, confirmed: boolean): void;
}
export type CacheObserver = (lookup: CacheLookup) => void;

/** How one provider notification ended (src/modules/subscriptions/provider-notifications.service.ts). */
export type NotificationOutcome = 'applied' | 'ignored' | 'refused' | 'failed';

/** How one outbound webhook attempt ended (src/modules/webhooks/webhook-dispatcher.ts). */
export type OutboundAttemptOutcome = 'succeeded' | 'retrying' | 'failed';
export type OutboundAttemptObserver = (outcome: OutboundAttemptOutcome, seconds: number) => void;

/**
 * The process's Prometheus metrics, in a registry of its own (several servers share a test process).
 * Labels stay bounded: routes are templates, never raw URLs; rules and outcomes are fixed sets.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request to the end of the response, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly cacheLookups = new Counter({
    name: 'tollgate_cache_lookups_total',
    help: 'Reads of the change-feed caches: hit, miss (loaded from PostgreSQL), bypass (feed not synced)',
    labelNames: ['cache', 'result'] as const,
    registers: [this.registry],
  });

  readonly changeFeedLag = new Histogram({
    name: 'tollgate_change_feed_lag_seconds',
    help: 'Time for the change feed to confirm that every committed change has arrived (a round trip on the listening connection), which cached reads wait for',
    labelNames: ['confirmed'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });

  readonly webhookEvents = new Counter({
    name: 'tollgate_webhook_events_total',
    help: 'Payment provider notifications received, by outcome: applied, ignored (duplicate or not relevant), refused (400), failed (500, retried by the provider)',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookStatementsPerCall = new Histogram({
    name: 'tollgate_webhook_statements_per_call',
    help: 'Statements of Stripe notifications carried by each call the receiver shares: 1 alone, more when they came while one was in flight',
    buckets: [1, 2, 4, 8, 16, 32, 50],
    registers: [this.registry],
  });

  readonly rateLimitRejections = new Counter({
    name: 'tollgate_rate_limit_rejections_total',
    help: 'Requests or GraphQL field calls refused with 429, by budget',
    labelNames: ['rule'] as const,
    registers: [this.registry],
  });

  readonly outboundAttempts = new Counter({
    name: 'tollgate_outbound_webhook_attempts_total',
    help: "Deliveries of Tollgate's own events to apps' endpoints, by outcome: succeeded (2xx), retrying (another attempt is scheduled), failed (no attempt left)",
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly outboundDuration = new Histogram({
    name: 'tollgate_outbound_webhook_attempt_duration_seconds',
    help: 'Time of one outbound webhook attempt, from connecting to the end of the answer or the failure',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** Set by `observePool`: the pg pool MikroORM built, read at each scrape. */
  #pool: (() => Promise<pg.Pool>) | undefined;

  constructor(options: { processMetrics: boolean }) {
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
    const pool = () => this.#pool?.();
    new Gauge({
      name: 'tollgate_db_pool_connections',
      help: 'Connections of the PostgreSQL pool, by state: in_use (lent to a request) or idle',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const p = await pool();
        if (!p) return;
        this.set({ state: 'in_use' }, p.totalCount - p.idleCount);
        this.set({ state: 'idle' }, p.idleCount);
      },
    });
    new Gauge({
      name: 'tollgate_db_pool_waiting',
      help: 'Requests waiting for a PostgreSQL connection from the pool',
      registers: [this.registry],
      async collect() {
        const p = await pool();
        if (p) this.set(p.waitingCount);
      },
    });
  }

  /** Reads the pool of MikroORM's PostgreSQL driver at scrape time (it may be replaced on reconnect). */
  observePool(orm: MikroORM): void {
    this.#pool = () => orm.em.getConnection().getNativeClient() as Promise<pg.Pool>;
  }

  cache(name: string): CacheObserver {
    return (result) => this.cacheLookups.inc({ cache: name, result });
  }

  get feed(): FeedObserver {
    return {
      synced: (seconds, confirmed) => this.changeFeedLag.observe({ confirmed: String(confirmed) }, seconds),
    };
  }

  notification(provider: string, outcome: NotificationOutcome): void {
    this.webhookEvents.inc({ provider, outcome });
  }

  sharedStatementCall(statements: number): void {
    this.webhookStatementsPerCall.observe(statements);
  }

  get outboundAttempt(): OutboundAttemptObserver {
    return (outcome, seconds) => {
      this.outboundAttempts.inc({ outcome });
      this.outboundDuration.observe(seconds);
    };
  }

  rateLimited(rule: string): void {
    this.rateLimitRejections.inc({ rule });
  }

  /** The exposition, and its content type (Prometheus text format 0.0.4). */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
