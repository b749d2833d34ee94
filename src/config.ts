import { z } from 'zod';

/**
 * Configuration is read from the environment once, validated, and frozen.
 * In production nothing is replaced by an embedded stand-in: every missing variable is named in one error.
 */
export interface Config {
  readonly production: boolean;
  readonly port: number;
  readonly host: string;
  readonly publicBaseUrl: string;
  readonly databaseUrl: string | undefined;
  /** Bounds on every wait for PostgreSQL, so a frozen or overloaded database yields 503s, not hung requests. */
  readonly database: DatabaseTimeouts;
  readonly dataDir: string;
  readonly redisUrl: string | undefined;
  /**
   * Which proxies in front of Tollgate to believe about the client address (X-Forwarded-For), as
   * Express's `trust proxy`: a hop count or a list of addresses/subnets. Unset: the TCP peer is the client.
   */
  readonly trustProxy: number | string | undefined;
  /**
   * Tollgate terminates TLS itself with this certificate chain and key (PEM files), serving HTTPS only.
   * In production either this or `trustProxy` must say how HTTPS reaches the service.
   */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** Bearer token that opens `/metrics` in production (open in development); unset: closed there. */
  readonly metricsToken: string | undefined;
  /** OTLP/HTTP endpoint traces go to; unset: no tracing, and no OpenTelemetry module is loaded. */
  readonly otelEndpoint: string | undefined;
  readonly stripe: {
    readonly secretKey: string | undefined;
    readonly webhookSecret: string | undefined;
    readonly apiBase: string | undefined;
    readonly emulatorPort: number;
    /** Minutes between two reconciliations of every linked customer with Stripe; 0 turns them off. */
    readonly reconcileIntervalMinutes: number;
  };
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string;
  readonly adminToken: string | undefined;
  /** Named dashboard operators (src/modules/operators/). */
  readonly operators: {
    /** Hours an operator session lasts without use. */
    readonly sessionIdleHours: number;
    /** Days an operator session lasts at most, used or not. */
    readonly sessionMaxDays: number;
    /** Whether the dashboard's admin-token sign-in is offered: always in development, opt-in in production. */
    readonly tokenSignIn: boolean;
  };
  /** Days audit events are kept before they are deleted. */
  readonly auditRetentionDays: number;
  readonly rateLimits: {
    readonly apiKey: number;
    readonly session: number;
    readonly publicIp: number;
    /** Prefix of the counters' keys, so several deployments can share one Redis. */
    readonly keyPrefix: string;
  };
  readonly graphql: { readonly introspection: boolean; readonly graphiql: boolean };
  /** The interactive REST API reference at `/docs` (src/rest/api-reference.ts). */
  readonly docs: boolean;
  readonly graphqlLimits: GraphQLLimits;
  /** Outbound webhooks (src/modules/webhooks/). */
  readonly webhooks: {
    /** AES-256-GCM key the endpoints' signing secrets are encrypted with at rest (32 bytes, base64). */
    readonly secretKey: string;
    /** Seconds to wait before each retry after the first, immediate attempt (Standard Webhooks' schedule). */
    readonly retryScheduleSeconds: readonly number[];
    /** Days a settled event is kept with its deliveries and attempts before it is deleted; 0: for ever. */
    readonly retentionDays: number;
  };
  /** Overage reported to the payment provider as meter events (src/modules/metering/overage-reporter.ts). */
  readonly overage: {
    /** Seconds an overage consumption's report waits before it runs; the sweep at start does not wait. */
    readonly reportDelaySeconds: number;
  };
  /** Background jobs (src/infra/job-queue.ts). */
  readonly jobQueue: {
    /** PostgreSQL schema holding the queue's tables; instances sharing it share the work. */
    readonly schema: string;
    /** How often jobs held by a dead process are taken back (with each queue's own expiry). */
    readonly superviseIntervalSeconds: number;
  };
  readonly logLevel: string;
  /** LOG_FORMAT; unset, the process decides (pretty at a development terminal, else JSON). */
  readonly logFormat: 'json' | 'pretty' | undefined;
}

/**
 * Milliseconds. The client-side bounds (acquire, connect, query, change feed, readiness) hold even when the
 * server cannot answer at all; the server-side ones (statement, idle in transaction) end work on a live
 * but slow server cleanly, so they sit below the client-side query bound.
 */
export interface DatabaseTimeouts {
  /** Waiting for a pooled connection, opening a new one included. */
  readonly acquireTimeoutMs: number;
  /** Opening one connection (TCP, TLS, authentication). */
  readonly connectTimeoutMs: number;
  /** One query, measured by the client: the only bound that holds on a frozen server. */
  readonly queryTimeoutMs: number;
  /** PostgreSQL's `statement_timeout`. */
  readonly statementTimeoutMs: number;
  /** PostgreSQL's `idle_in_transaction_session_timeout`: locks of a stalled transaction are released. */
  readonly idleInTransactionTimeoutMs: number;
  /** How long a cache read waits for the change feed to confirm freshness before it reads the database. */
  readonly changeFeedTimeoutMs: number;
  /** The `/readyz` probe. */
  readonly readinessTimeoutMs: number;
}

/** What one GraphQL document may ask for; anonymous callers get their own, tighter budget. */
export interface GraphQLBudget {
  /** Bytes of the `query` text, checked before it is parsed. */
  readonly maxDocumentBytes: number;
  readonly maxAliases: number;
  readonly maxFragmentSpreads: number;
  /** Field selections written in the document (bounds the work of GraphQL's own validation). */
  readonly maxFields: number;
  /** Estimated size of the answer (see `estimateCost` in src/graphql/hardening.ts). */
  readonly maxComplexity: number;
  /** Root fields and per-parent field resolvers the operation runs: each is a trip to the database. */
  readonly maxResolverCalls: number;
}

export interface GraphQLLimits {
  readonly authenticated: GraphQLBudget;
  readonly anonymous: GraphQLBudget;
  readonly maxDepth: number;
  /** GraphQL requests one credential (or one IP without credential) may have running at once. */
  readonly maxConcurrentPerCredential: number;
  /** Requests of one credential waiting for a turn; more are refused at once (429). */
  readonly maxQueuedPerCredential: number;
  /** How long a request waits for a turn before it is refused (429). */
  readonly queueTimeoutMs: number;
  /** Database connections one GraphQL request may hold at once (the pool has 20). */
  readonly maxConnectionsPerRequest: number;
}

export class ConfigError extends Error {}

/** Variables without which a production instance must not start. */
export const REQUIRED_IN_PRODUCTION = [
  'DATABASE_URL',
  'ADMIN_TOKEN',
  'PUBLIC_BASE_URL',
  'STRIPE_SECRET_KEY',
  'STRIPE_WEBHOOK_SECRET',
  'SMTP_URL',
  'MAIL_FROM',
  'WEBHOOK_SECRET_KEY',
] as const;

/**
 * Development only: the key endpoint secrets are encrypted with when WEBHOOK_SECRET_KEY is unset. It is
 * public (it is in this file), so production refuses to start without a key of its own.
 */
const DEVELOPMENT_WEBHOOK_SECRET_KEY = 'dG9sbGdhdGUtZGV2ZWxvcG1lbnQtb25seS1rZXktMzI=';

const port = z.coerce.number().int().min(0).max(65535);
const positive = z.coerce.number().int().positive();
/** A duration in milliseconds, at most ten minutes (a longer wait is never what a request wants). */
const millis = z.coerce.number().int().positive().max(600_000);
const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const envSchema = z.object({
  NODE_ENV: z.string().optional(),
  PORT: port.default(4000),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z.string().min(1).optional(),
  DATABASE_ACQUIRE_TIMEOUT_MS: millis.default(1_500),
  DATABASE_CONNECT_TIMEOUT_MS: millis.default(1_500),
  DATABASE_QUERY_TIMEOUT_MS: millis.default(2_500),
  DATABASE_STATEMENT_TIMEOUT_MS: millis.default(2_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: millis.default(10_000),
  CHANGE_FEED_TIMEOUT_MS: millis.default(1_000),
  READINESS_TIMEOUT_MS: millis.default(2_000),
  DATA_DIR: z.string().min(1).default('.data'),
  REDIS_URL: z.string().min(1).optional(),
  TRUST_PROXY: z.string().min(1).optional(),
  TLS_CERT_FILE: z.string().min(1).optional(),
  TLS_KEY_FILE: z.string().min(1).optional(),
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  // Read by the OpenTelemetry exporter itself (src/telemetry/tracing.ts); validated here like the rest.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_BSP_SCHEDULE_DELAY: millis.optional(),
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  STRIPE_API_BASE: z.url({ protocol: /^https?$/ }).optional(),
  STRIPE_EMULATOR_PORT: port.default(12111),
  // Said as a cron schedule, so it must divide an hour, or be whole hours dividing a day.
  STRIPE_RECONCILE_INTERVAL_MINUTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(1440)
    .refine((m) => m === 0 || (m <= 60 ? 60 % m === 0 : m % 60 === 0 && 1440 % m === 0), {
      message:
        'STRIPE_RECONCILE_INTERVAL_MINUTES must divide an hour (e.g. 15, 30, 60) or be whole hours dividing a day (120, 360, 720, 1440), or 0 to turn it off',
    })
    .default(360),
  SMTP_URL: z.string().min(1).optional(),
  MAIL_FROM: z.string().min(1).optional(),
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  OPERATOR_SESSION_IDLE_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .default(12),
  OPERATOR_SESSION_MAX_DAYS: z.coerce.number().int().min(1).max(365).default(7),
  DASHBOARD_TOKEN_SIGNIN: flag.optional(),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(365),
  RATE_LIMIT_API_KEY: positive.default(1000),
  RATE_LIMIT_SESSION: positive.default(100),
  RATE_LIMIT_PUBLIC_IP: positive.default(60),
  RATE_LIMIT_KEY_PREFIX: z.string().min(1).default('tollgate:rl'),
  GRAPHQL_INTROSPECTION: flag.optional(),
  GRAPHIQL: flag.optional(),
  DOCS: flag.optional(),
  GRAPHQL_MAX_DOCUMENT_BYTES: positive.default(16_384),
  GRAPHQL_ANONYMOUS_MAX_DOCUMENT_BYTES: positive.default(8_192),
  GRAPHQL_MAX_ALIASES: positive.default(30),
  GRAPHQL_ANONYMOUS_MAX_ALIASES: positive.default(10),
  GRAPHQL_MAX_FRAGMENT_SPREADS: positive.default(100),
  GRAPHQL_ANONYMOUS_MAX_FRAGMENT_SPREADS: positive.default(40),
  GRAPHQL_MAX_FIELDS: positive.default(500),
  GRAPHQL_ANONYMOUS_MAX_FIELDS: positive.default(250),
  GRAPHQL_MAX_DEPTH: positive.default(10),
  GRAPHQL_MAX_COMPLEXITY: positive.default(5000),
  GRAPHQL_ANONYMOUS_MAX_COMPLEXITY: positive.default(1000),
  GRAPHQL_MAX_RESOLVER_CALLS: positive.default(20),
  GRAPHQL_ANONYMOUS_MAX_RESOLVER_CALLS: positive.default(5),
  // One at a time: a GraphQL document is mostly JavaScript work on the one event loop, so a second running
  // document of the same credential adds little to its throughput and much to everyone else's latency
  // (bench/graphql-fairness.js: other apps' p99 2.5x idle with 1, 2.9-4.2x with 2, on a quiet machine).
  GRAPHQL_MAX_CONCURRENT_PER_CREDENTIAL: positive.default(1),
  // As many as an API key's rate-limit window admits: the rate limit decides how many requests a
  // credential may send, the queue only takes them one at a time (a parked request costs little).
  GRAPHQL_MAX_QUEUED_PER_CREDENTIAL: z.coerce.number().int().min(0).default(1000),
  GRAPHQL_QUEUE_TIMEOUT_MS: positive.default(5000),
  GRAPHQL_MAX_CONNECTIONS_PER_REQUEST: positive.default(2),
  WEBHOOK_SECRET_KEY: z
    .string()
    .refine(
      (value) => /^[A-Za-z0-9+/]+={0,2}$/.test(value) && Buffer.from(value, 'base64').length === 32,
      'WEBHOOK_SECRET_KEY must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)',
    )
    .optional(),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'WEBHOOK_RETRY_SCHEDULE must be seconds separated by commas, e.g. 5,300,1800')
    .default('5,300,1800,7200,18000,36000,36000'),
  WEBHOOK_RETENTION_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  JOB_QUEUE_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'JOB_QUEUE_SCHEMA must be a lower-case PostgreSQL identifier')
    .default('pgboss'),
  JOB_QUEUE_SUPERVISE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  OVERAGE_REPORT_DELAY_SECONDS: z.coerce.number().int().min(0).max(86_400).default(0),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
});

/** Every variable Tollgate reads (deployment files are checked against it: test/unit/compose.test.ts). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

/** What the configuration is read for: serving (everything), or a command that only touches the database. */
export interface LoadOptions {
  /**
   * `serve` (default): production requires REQUIRED_IN_PRODUCTION and a way to HTTPS. `database`
   * (`migrate`, `db create`): production requires DATABASE_URL only; the rest is validated when set.
   */
  readonly scope?: 'serve' | 'database';
}

/** What a database-only command needs in production. */
export const REQUIRED_FOR_DATABASE_COMMANDS = ['DATABASE_URL'] as const;

/** Parses an environment (default `process.env`) into a frozen Config, or throws one ConfigError naming every problem. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): Config {
  // Empty strings count as unset, as they do in most deployment tools.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const production = cleaned.NODE_ENV === 'production';
  const serving = (options.scope ?? 'serve') === 'serve';

  const problems: string[] = [];
  if (production) {
    const required = serving ? REQUIRED_IN_PRODUCTION : REQUIRED_FOR_DATABASE_COMMANDS;
    const missing = required.filter((name) => cleaned[name] === undefined);
    if (missing.length > 0) {
      problems.push(`missing required variables for NODE_ENV=production: ${missing.join(', ')}`);
    }
  }
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${issue.path.join('.')}: ${issue.message}`);
  }
  if (parsed.success)
    problems.push(...timeoutProblems(parsed.data), ...httpsProblems(parsed.data, production && serving));
  if (problems.length > 0 || !parsed.success) {
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  const config: Config = {
    production,
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    database: {
      acquireTimeoutMs: e.DATABASE_ACQUIRE_TIMEOUT_MS,
      connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
      queryTimeoutMs: e.DATABASE_QUERY_TIMEOUT_MS,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      idleInTransactionTimeoutMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      changeFeedTimeoutMs: e.CHANGE_FEED_TIMEOUT_MS,
      readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    },
    dataDir: e.DATA_DIR,
    redisUrl: e.REDIS_URL,
    trustProxy: e.TRUST_PROXY && /^\d+$/.test(e.TRUST_PROXY) ? Number(e.TRUST_PROXY) : e.TRUST_PROXY,
    tls:
      e.TLS_CERT_FILE && e.TLS_KEY_FILE ? { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE } : undefined,
    metricsToken: e.METRICS_TOKEN,
    otelEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    stripe: {
      secretKey: e.STRIPE_SECRET_KEY,
      webhookSecret: e.STRIPE_WEBHOOK_SECRET,
      apiBase: e.STRIPE_API_BASE,
      emulatorPort: e.STRIPE_EMULATOR_PORT,
      reconcileIntervalMinutes: e.STRIPE_RECONCILE_INTERVAL_MINUTES,
    },
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM ?? 'Tollgate <no-reply@tollgate.localhost>',
    adminToken: e.ADMIN_TOKEN,
    operators: {
      sessionIdleHours: e.OPERATOR_SESSION_IDLE_HOURS,
      sessionMaxDays: e.OPERATOR_SESSION_MAX_DAYS,
      tokenSignIn: e.DASHBOARD_TOKEN_SIGNIN ?? !production,
    },
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    rateLimits: {
      apiKey: e.RATE_LIMIT_API_KEY,
      session: e.RATE_LIMIT_SESSION,
      publicIp: e.RATE_LIMIT_PUBLIC_IP,
      keyPrefix: e.RATE_LIMIT_KEY_PREFIX,
    },
    graphql: {
      introspection: e.GRAPHQL_INTROSPECTION ?? !production,
      graphiql: e.GRAPHIQL ?? !production,
    },
    docs: e.DOCS ?? !production,
    graphqlLimits: {
      authenticated: {
        maxDocumentBytes: e.GRAPHQL_MAX_DOCUMENT_BYTES,
        maxAliases: e.GRAPHQL_MAX_ALIASES,
        maxFragmentSpreads: e.GRAPHQL_MAX_FRAGMENT_SPREADS,
        maxFields: e.GRAPHQL_MAX_FIELDS,
        maxComplexity: e.GRAPHQL_MAX_COMPLEXITY,
        maxResolverCalls: e.GRAPHQL_MAX_RESOLVER_CALLS,
      },
      anonymous: {
        maxDocumentBytes: e.GRAPHQL_ANONYMOUS_MAX_DOCUMENT_BYTES,
        maxAliases: e.GRAPHQL_ANONYMOUS_MAX_ALIASES,
        maxFragmentSpreads: e.GRAPHQL_ANONYMOUS_MAX_FRAGMENT_SPREADS,
        maxFields: e.GRAPHQL_ANONYMOUS_MAX_FIELDS,
        maxComplexity: e.GRAPHQL_ANONYMOUS_MAX_COMPLEXITY,
        maxResolverCalls: e.GRAPHQL_ANONYMOUS_MAX_RESOLVER_CALLS,
      },
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxConcurrentPerCredential: e.GRAPHQL_MAX_CONCURRENT_PER_CREDENTIAL,
      maxQueuedPerCredential: e.GRAPHQL_MAX_QUEUED_PER_CREDENTIAL,
      queueTimeoutMs: e.GRAPHQL_QUEUE_TIMEOUT_MS,
      maxConnectionsPerRequest: e.GRAPHQL_MAX_CONNECTIONS_PER_REQUEST,
    },
    webhooks: {
      secretKey: e.WEBHOOK_SECRET_KEY ?? DEVELOPMENT_WEBHOOK_SECRET_KEY,
      retryScheduleSeconds: e.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number),
      retentionDays: e.WEBHOOK_RETENTION_DAYS,
    },
    overage: { reportDelaySeconds: e.OVERAGE_REPORT_DELAY_SECONDS },
    jobQueue: {
      schema: e.JOB_QUEUE_SCHEMA,
      superviseIntervalSeconds: e.JOB_QUEUE_SUPERVISE_INTERVAL_SECONDS,
    },
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
  };
  return deepFreeze(config);
}

/**
 * Orderings that keep each bound meaningful: a statement PostgreSQL would cancel must be cancelled there
 * (the connection stays usable) before the client gives up on it, and opening a connection cannot take
 * longer than the wait for one that includes it.
 */
function timeoutProblems(e: z.infer<typeof envSchema>): string[] {
  const problems: string[] = [];
  if (e.DATABASE_STATEMENT_TIMEOUT_MS >= e.DATABASE_QUERY_TIMEOUT_MS) {
    problems.push('DATABASE_STATEMENT_TIMEOUT_MS must be below DATABASE_QUERY_TIMEOUT_MS');
  }
  if (e.DATABASE_CONNECT_TIMEOUT_MS > e.DATABASE_ACQUIRE_TIMEOUT_MS) {
    problems.push('DATABASE_CONNECT_TIMEOUT_MS must not exceed DATABASE_ACQUIRE_TIMEOUT_MS');
  }
  return problems;
}

/**
 * The interface requires HTTPS for every request, so production must say how HTTPS reaches it: TLS
 * terminated here (certificate and key) or by a proxy in front (TRUST_PROXY, whose X-Forwarded-Proto is
 * then believed). Development serves plain HTTP on loopback and needs neither.
 */
function httpsProblems(e: z.infer<typeof envSchema>, production: boolean): string[] {
  if ((e.TLS_CERT_FILE === undefined) !== (e.TLS_KEY_FILE === undefined)) {
    return ['TLS_CERT_FILE and TLS_KEY_FILE must be set together'];
  }
  if (production && e.TLS_CERT_FILE === undefined && e.TRUST_PROXY === undefined) {
    return [
      'NODE_ENV=production requires HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE to terminate TLS here, or TRUST_PROXY when a proxy in front terminates it',
    ];
  }
  return [];
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    if (child && typeof child === 'object') deepFreeze(child);
  }
  return Object.freeze(value);
}
