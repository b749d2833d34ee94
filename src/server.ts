import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createHttpApp } from './app.js';
import { type Config, ConfigError } from './config.js';
import { type Clock, systemClock } from './core/clock.js';
import { ADMIN } from './core/principal.js';
import { databaseFailure, listenFailure } from './core/startup-errors.js';
import { randomSecret } from './core/tokens.js';
import { connect, migrateUnbounded, type Orm, timeoutOptions, withContext } from './db.js';
import type { EmbeddedPostgres } from './infra/embedded-postgres.js';
import { JobQueue } from './infra/job-queue.js';
import { type Logger, loggerFor } from './infra/logger.js';
import { createMailer } from './modules/email/email.js';
import { type PaymentsRuntime, startPayments } from './modules/payments/payments.runtime.js';
import { createRateLimitStore, type RateLimitStore } from './modules/rate-limits/rate-limit-store.js';
import { scheduleStripeReconcile } from './modules/subscriptions/subscription-reconcile.jobs.js';
import type { Resolver } from './modules/webhooks/address-guard.js';
import { answerClientErrors } from './rest/client-errors.js';
import { createServices, type Deps, type Services } from './services.js';
import { Metrics } from './telemetry/metrics.js';

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  readonly adminToken: string;
  readonly deps: Deps;
  readonly services: Services;
  /** Present on the first start of a development instance only. */
  readonly demo?: { readonly appId: string; readonly apiKey: string };
  /** The owner a development start created for the dev mailbox (first start only). */
  readonly devOwner?: string;
  /** Where payments go (the in-process Stripe emulator when no STRIPE_SECRET_KEY is set). */
  readonly payments: PaymentsRuntime;
  /** Stops accepting connections, lets in-flight requests finish, then closes the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Create the demo app on an empty database (development start); default true outside production. */
  readonly seedDemo?: boolean;
  /** How webhook destinations are resolved (default: the system resolver). */
  readonly webhookResolver?: Resolver;
}

/**
 * Resolves the database: DATABASE_URL, or embedded PostgreSQL under DATA_DIR. The embedded server is a
 * development dependency that production images leave out, so it is loaded only on that branch.
 */
export async function openDatabase(
  config: Config,
  logger: Logger,
): Promise<{ url: string; source: string; embedded?: EmbeddedPostgres }> {
  if (config.databaseUrl) return { url: config.databaseUrl, source: 'DATABASE_URL' };
  const dir = path.join(config.dataDir, 'postgres');
  logger.info({ dir }, 'DATABASE_URL is not set: starting embedded PostgreSQL');
  const { startEmbeddedPostgres, EmbeddedPostgresMissingError } = await import(
    './infra/embedded-postgres.js'
  );
  const embedded = await startEmbeddedPostgres({
    dir,
    onLog: (line) => logger.debug({ postgres: line }),
  }).catch((error: unknown) => {
    // Reported like any other setting to fix: one line, no stack.
    throw error instanceof EmbeddedPostgresMissingError ? new ConfigError(error.message) : error;
  });
  return { url: embedded.url, source: 'embedded PostgreSQL', embedded };
}

/**
 * Connects and proves the connection with one query: MikroORM connects lazily, so without it an
 * unreachable database would surface later, deep in a migration, as a stack trace. Here it fails once,
 * naming the server and the setting to fix.
 */
export async function connectDatabase(
  database: { url: string; source: string },
  options?: Parameters<typeof connect>[1],
): Promise<Orm> {
  const orm = await connect(database.url, options);
  try {
    await orm.em.getConnection().execute('select 1');
  } catch (error) {
    await orm.close(true).catch(() => undefined);
    throw databaseFailure(error, database.url, database.source);
  }
  return orm;
}

/** ADMIN_TOKEN, or in development a token generated once and kept in DATA_DIR so restarts reuse it. */
async function resolveAdminToken(config: Config): Promise<string> {
  if (config.adminToken) return config.adminToken;
  const file = path.join(config.dataDir, 'admin-token');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const token = randomSecret('tg_admin_');
  await mkdir(config.dataDir, { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return token;
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? loggerFor(config);
  const database = await openDatabase(config, logger);
  let orm: Orm | undefined;
  let rateLimitStore: RateLimitStore | undefined;
  let payments: PaymentsRuntime | undefined;
  let jobs: JobQueue | undefined;
  try {
    orm = await connectDatabase(database, timeoutOptions(config.database));
    const applied = await migrateUnbounded(orm);
    if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');

    jobs = await JobQueue.start({
      connectionString: database.url,
      logger,
      schema: config.jobQueue.schema,
      superviseIntervalSeconds: config.jobQueue.superviseIntervalSeconds,
      workers: true,
    });

    const adminToken = await resolveAdminToken(config);
    const mailer = createMailer(config, logger);
    rateLimitStore = await createRateLimitStore({
      redisUrl: config.redisUrl,
      keyPrefix: config.rateLimits.keyPrefix,
      logger,
    });
    const seedDemo = options.seedDemo ?? !config.production;
    payments = await startPayments(config, { logger, persistEmulatorState: seedDemo });
    const deps: Deps = {
      config,
      orm,
      clock: options.clock ?? systemClock,
      logger,
      adminToken,
      mailer,
      rateLimitStore,
      payments: payments.provider,
      metrics: new Metrics({ processMetrics: true }),
      jobs,
      webhookResolver: options.webhookResolver,
    };
    deps.metrics?.observePool(orm);
    const services = createServices(deps);
    await services.webhookDispatcher.start();
    await services.seatBilling.start();
    await services.overageReporter.start();
    await services.audit.start(jobs);
    const demo = seedDemo ? await seedDemoApp(orm, services, payments.emulator !== undefined) : undefined;
    const devOwner = seedDemo ? await seedDevOwner(orm, services) : undefined;

    const httpServer = await createListener(config);
    const app = await createHttpApp(deps, services);
    httpServer.on('request', app);
    httpServer.on('clientError', answerClientErrors(logger));
    await listen(httpServer, config.port, config.host).catch((error: unknown) => {
      throw listenFailure(error, { port: config.port, host: config.host, variable: 'PORT' });
    });
    const port = (httpServer.address() as AddressInfo).port;
    const scheme = config.tls ? 'https' : 'http';
    const url = `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    payments.connectWebhooks(`${url}/v1/webhooks/stripe`);
    const ormRef = orm;
    // Drift repair with Stripe on the job queue, one run at a time across instances.
    await scheduleStripeReconcile(jobs, config.stripe.reconcileIntervalMinutes, () =>
      withContext(ormRef, () => services.subscriptionReconcile.reconcile()),
    );

    let closing: Promise<void> | undefined;
    const storeRef = rateLimitStore;
    const paymentsRef = payments;
    const jobsRef = jobs;
    return {
      url,
      port,
      adminToken,
      deps,
      services,
      demo,
      devOwner,
      payments,
      close() {
        closing ??= (async () => {
          await closeServer(httpServer); // waits for in-flight requests
          await services.outboundEvents.settled();
          await jobsRef.stop(); // lets running jobs finish before the database goes
          await paymentsRef.close();
          await services.changes.close();
          await storeRef.close();
          await ormRef.close(true);
          mailer.close();
          await database.embedded?.stop();
        })();
        return closing;
      },
    };
  } catch (error) {
    await rateLimitStore?.close().catch(() => undefined);
    await payments?.close().catch(() => undefined);
    await jobs?.stop().catch(() => undefined);
    await orm?.close(true).catch(() => undefined);
    await database.embedded?.stop().catch(() => undefined);
    throw error;
  }
}

/**
 * On an empty database, creates a demo app with an API key so a first start is usable at once, and its
 * plans: `free` (the default) and, when the bundled Stripe emulator is in use, `pro` with a 14-day trial
 * sold at a real emulator price. Against a real Stripe account nothing is created there uninvited.
 */
async function seedDemoApp(
  orm: Orm,
  services: Services,
  withEmulator: boolean,
): Promise<RunningServer['demo']> {
  return withContext(orm, async () => {
    if ((await services.apps.listApps(ADMIN)).length > 0) return undefined;
    const { app, apiKey } = await services.apps.createApp(ADMIN, {
      name: 'Demo app',
      allowedCallbackUrls: 'http://localhost:*/*',
    });
    await services.plans.upsertPlan(ADMIN, app.id, {
      id: 'free',
      name: 'Free',
      isDefault: true,
      features: { projects: 1, support: 'community' },
    });
    if (withEmulator) {
      const price = await services.plans.createPlanPrice(ADMIN, { productName: 'Pro', unitAmount: 1900 });
      await services.plans.upsertPlan(ADMIN, app.id, {
        id: 'pro',
        name: 'Pro',
        stripePriceId: price.id,
        trialDays: 14,
        features: { projects: 100, support: 'email', sso: true },
      });
    }
    return { appId: app.id, apiKey: apiKey.secret };
  });
}

/** The address of the owner a development start creates: the dev mailbox shows every message sent to it. */
export const DEV_OWNER_EMAIL = 'owner@tollgate.localhost';

/**
 * With no operator yet, a development start makes one owner for the dev mailbox, so the dashboard's
 * e-mail sign-in works at once (the link arrives at /dev/mailbox).
 */
async function seedDevOwner(orm: Orm, services: Services): Promise<string | undefined> {
  return withContext(orm, async () => {
    if (await services.operators.anyOperator()) return undefined;
    await services.operators.addOperator(ADMIN, { email: DEV_OWNER_EMAIL, role: 'owner' });
    return DEV_OWNER_EMAIL;
  });
}

/**
 * Plain HTTP, or HTTPS when Tollgate terminates TLS itself (TLS_CERT_FILE, TLS_KEY_FILE). The files are
 * read once at start; an unreadable one stops the start with the variable to fix.
 */
async function createListener(config: Config): Promise<Server> {
  // Host is checked in the app (src/rest/request-guard.ts), whose 400 carries the error envelope.
  if (!config.tls) return createServer({ requireHostHeader: false });
  const read = async (file: string, variable: string) => {
    try {
      return await readFile(file);
    } catch (error) {
      throw new ConfigError(
        `${variable}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? error})`,
      );
    }
  };
  const cert = await read(config.tls.certFile, 'TLS_CERT_FILE');
  const key = await read(config.tls.keyFile, 'TLS_KEY_FILE');
  return createHttpsServer({ cert, key, requireHostHeader: false });
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** How long a shutdown waits for requests in flight before it cuts their connections. */
const DRAIN_GRACE_MS = 10_000;

/**
 * Stops accepting connections, closes idle keep-alive ones, and resolves once every request in flight
 * has been answered; connections still busy after `DRAIN_GRACE_MS` are cut.
 */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    const cut = setTimeout(() => server.closeAllConnections(), DRAIN_GRACE_MS);
    cut.unref();
    server.close(() => {
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}
