import 'reflect-metadata';
import { ConfigError, loadConfig } from './config.js';
import { systemClock } from './core/clock.js';
import { NotFoundError, ValidationError } from './core/errors.js';
import { ADMIN } from './core/principal.js';
import { listenFailure, serverOf } from './core/startup-errors.js';
import { randomSecret } from './core/tokens.js';
import { migrate as applyMigrations, withContext } from './db.js';
import { createDatabaseOf } from './infra/database-admin.js';
import { JobQueue } from './infra/job-queue.js';
import { type Logger, loggerFor } from './infra/logger.js';
import { createMailer } from './modules/email/email.js';
import { cliPaymentProvider } from './modules/payments/payments.runtime.js';
import { MemoryRateLimitStore } from './modules/rate-limits/rate-limit-store.js';
import { connectDatabase, openDatabase, type RunningServer, startServer } from './server.js';
import { createServices } from './services.js';
import { StripeEmulator } from './stripe-emulator/stripe-emulator.js';
import { runBeforeExit } from './telemetry/shutdown.js';

/** What each `tollgate` command does (src/cli.ts parses the command line and loads this on demand). */

type Services = ReturnType<typeof createServices>;

/**
 * What an operator needs to start. The banner ends up in container logs, so in production it names no
 * secret (the admin token came from ADMIN_TOKEN: its owner has it already) and lists only what is served.
 */
function printBanner(server: RunningServer): void {
  const { production, graphql, docs } = server.deps.config;
  const lines = [
    '',
    '  Tollgate is running',
    '',
    `  REST API     ${server.url}/v1`,
    ...(docs ? [`  API docs     ${server.url}/docs`] : []),
    graphql.graphiql ? `  GraphiQL     ${server.url}/graphql` : `  GraphQL      ${server.url}/graphql`,
    `  Dashboard    ${server.url}/dashboard`,
    production ? '  Admin token  the value of ADMIN_TOKEN' : `  Admin token  ${server.adminToken}`,
  ];
  if (!production) lines.push(`  Dev mailbox  ${server.url}/dev/mailbox`);
  if (server.payments.emulator)
    lines.push(`  Stripe       emulator at ${server.payments.emulator.url} (test card 4242 4242 4242 4242)`);
  if (server.demo && !production) {
    lines.push(
      '',
      '  A demo app was created (shown on this first start only):',
      `  App id       ${server.demo.appId}`,
      `  API key      ${server.demo.apiKey}`,
      `  Plans        free (default)${server.payments.emulator ? ', pro (14-day trial)' : ''}`,
    );
  }
  if (server.devOwner && !production) {
    lines.push(
      '',
      `  Operator     ${server.devOwner} (owner): sign in to the dashboard by e-mail, the link is in the dev mailbox`,
    );
  }
  lines.push('');
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * `serve`: starts, prints the banner, and on SIGINT/SIGTERM finishes in-flight requests, stops what it
 * started (the embedded PostgreSQL last), then exits 0. A signal during start-up is kept until the start
 * is done, so nothing it started (a database server in its own process group) is left behind; a second
 * signal ends the process at once, as the default would.
 */
export async function serve(): Promise<void> {
  const config = loadConfig();
  let stop: ((signal: NodeJS.Signals) => void) | undefined;
  let early: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    if (stop) stop(signal);
    else early = signal;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const server = await startServer(config);
  printBanner(server);
  stop = (signal) => {
    server.deps.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    server.close().then(
      async () => {
        await runBeforeExit();
        server.deps.logger.info('stopped');
        process.exit(0);
      },
      (error) => {
        server.deps.logger.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  if (early) stop(early);
}

/** A one-shot command's logger: on stderr, since a JSON command's stdout is its JSON and nothing else. */
function commandLogger(config: ReturnType<typeof loadConfig>): Logger {
  return loggerFor(config, { level: process.env.LOG_LEVEL ?? 'warn', toStderr: true });
}

/**
 * `migrate`: the release step. Applies Tollgate's migrations and the job queue's, and nothing else: it
 * reads only the database settings, so a production release needs DATABASE_URL alone.
 */
export async function migrate(): Promise<void> {
  const config = loadConfig(process.env, { scope: 'database' });
  const logger = commandLogger(config);
  const database = await openDatabase(config, logger);
  try {
    const orm = await connectDatabase(database);
    try {
      await applyMigrations(orm);
      // The queue migrates its own schema on start; with no workers it runs nothing.
      const jobs = await JobQueue.start({
        connectionString: database.url,
        logger,
        schema: config.jobQueue.schema,
        superviseIntervalSeconds: config.jobQueue.superviseIntervalSeconds,
        workers: false,
        maxConnections: 1,
      });
      await jobs.stop();
    } finally {
      await orm.close(true);
    }
  } finally {
    await database.embedded?.stop();
  }
  process.stdout.write('migrations: up to date\n');
}

/** `db create`: the one way a database comes into being (besides development's embedded cluster). */
export async function createDatabase(): Promise<void> {
  const config = loadConfig(process.env, { scope: 'database' });
  if (!config.databaseUrl) {
    throw new ConfigError(
      'DATABASE_URL is not set: without it Tollgate uses embedded PostgreSQL, whose database always exists',
    );
  }
  const { name, created } = await createDatabaseOf(config.databaseUrl);
  const where = `on ${serverOf(config.databaseUrl)}`;
  process.stdout.write(
    created ? `database "${name}" created ${where}\n` : `database "${name}" already exists ${where}\n`,
  );
}

/** Runs a one-shot command against the configured database with the operator's authority. */
async function withDatabase<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const logger = commandLogger(config);
  const database = await openDatabase(config, logger);
  let orm: Awaited<ReturnType<typeof connectDatabase>> | undefined;
  let jobs: JobQueue | undefined;
  try {
    orm = await connectDatabase(database);
    await applyMigrations(orm);
    // Enqueue only: what a command enqueues (an outbound event, say) is run by a serving instance.
    jobs = await JobQueue.start({
      connectionString: database.url,
      logger,
      schema: config.jobQueue.schema,
      superviseIntervalSeconds: config.jobQueue.superviseIntervalSeconds,
      workers: false,
      maxConnections: 1,
    });
    const services = createServices({
      config,
      orm,
      clock: systemClock,
      logger,
      adminToken: config.adminToken ?? '',
      mailer: createMailer(config, logger),
      // One-shot commands serve no HTTP requests: nothing to count.
      rateLimitStore: new MemoryRateLimitStore(config.rateLimits.keyPrefix),
      payments: cliPaymentProvider(config),
      jobs,
    });
    const ormRef = orm;
    return await withContext(ormRef, () => fn(services));
  } finally {
    await jobs?.stop();
    await orm?.close(true);
    await database.embedded?.stop();
  }
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function presentOperator(operator: { id: string; email: string; role: string; createdAt: Date }) {
  return {
    id: operator.id,
    email: operator.email,
    role: operator.role,
    createdAt: operator.createdAt.toISOString(),
  };
}

/** `operators add` */
export async function addOperator(options: { email: string; role: string }): Promise<void> {
  printJson(
    await withDatabase(async (services) =>
      presentOperator(
        await services.operators.addOperator(ADMIN, { email: options.email, role: options.role }),
      ),
    ),
  );
}

/** `operators list` */
export async function listOperators(): Promise<void> {
  printJson(
    await withDatabase(async (services) =>
      (await services.operators.listOperators(ADMIN)).map(presentOperator),
    ),
  );
}

/** `operators remove` */
export async function removeOperator(options: { email: string }): Promise<void> {
  printJson(
    await withDatabase(async (services) => {
      const wanted = options.email.toLowerCase();
      const operator = (await services.operators.listOperators(ADMIN)).find((o) => o.emailLower === wanted);
      if (!operator) throw new NotFoundError('Operator', options.email);
      return services.operators.removeOperator(ADMIN, operator.id);
    }),
  );
}

/** `apps create` */
export async function createApp(options: { name: string; callbackUrl?: string[] }): Promise<void> {
  printJson(
    await withDatabase(async (services) => {
      const { app, apiKey } = await services.apps.createApp(ADMIN, {
        name: options.name,
        ...(options.callbackUrl ? { allowedCallbackUrls: options.callbackUrl.join('\n') } : {}),
      });
      return { appId: app.id, apiKey: apiKey.secret };
    }),
  );
}

/** `keys create` */
export async function createKey(options: { app: string; name?: string }): Promise<void> {
  printJson(
    await withDatabase(async (services) => {
      const input = options.name === undefined ? {} : { name: options.name };
      const { key, secret } = await services.apps.createApiKey(ADMIN, options.app, input);
      return { keyId: key.id, apiKey: secret };
    }),
  );
}

/** `plans upsert`: optionally creates the price at Stripe first, then upserts the plan as the operator. */
/** `plans upsert`'s options, as commander parses them (src/cli.ts). */
export interface PlanOptions {
  readonly app: string;
  readonly id: string;
  readonly name?: string;
  readonly price?: string;
  readonly amount?: string;
  readonly currency?: string;
  readonly interval?: string;
  readonly trialDays?: string;
  readonly features?: string;
  readonly default?: boolean;
}

/** `stripe-emulator`'s options. */
export interface EmulatorOptions {
  readonly port?: string;
  readonly webhookUrl?: string;
  readonly webhookSecret?: string;
  readonly state?: string;
}

export async function upsertPlan(options: PlanOptions): Promise<void> {
  if (options.price && options.amount) throw new ValidationError('give either --price or --amount, not both');
  let features: unknown;
  if (options.features !== undefined) {
    try {
      features = JSON.parse(options.features);
    } catch {
      throw new ValidationError('--features must be a JSON object, e.g. \'{"projects": 10, "sso": true}\'');
    }
  }
  const plan = await withDatabase(async (services) => {
    const price = options.amount
      ? await services.plans.createPlanPrice(ADMIN, {
          productName: options.name ?? options.id,
          unitAmount: Number(options.amount),
          ...(options.currency ? { currency: options.currency } : {}),
          ...(options.interval ? { interval: options.interval } : {}),
        })
      : undefined;
    return services.plans.upsertPlan(ADMIN, options.app, {
      id: options.id,
      name: options.name,
      ...(price ? { stripePriceId: price.id } : options.price ? { stripePriceId: options.price } : {}),
      ...(options.trialDays !== undefined ? { trialDays: Number(options.trialDays) } : {}),
      ...(features !== undefined ? { features } : {}),
      ...(options.default ? { isDefault: true } : {}),
    });
  });
  printJson({
    id: plan.slug,
    name: plan.name,
    stripePriceId: plan.stripePriceId,
    trialDays: plan.trialDays,
    features: plan.features,
    isDefault: plan.isDefault,
  });
}

/** `sync` */
export async function sync(options: { app: string }): Promise<void> {
  printJson(
    await withDatabase((services) => services.subscriptionReconcile.reconcileApp(ADMIN, options.app)),
  );
}

/**
 * `analytics verify`: the MRR ledger against what each subscription counts for now, as JSON; with
 * `repair`, the differences closed by correcting movements. Exits 1 when differences remain.
 */
export async function analyticsVerify(options: { app?: string; repair?: boolean }): Promise<void> {
  const report = await withDatabase((services) =>
    services.mrrVerification.verify(ADMIN, { appId: options.app, repair: options.repair === true }),
  );
  printJson(report);
  if (!options.repair && report.differences.length > 0) {
    process.stderr.write(
      `tollgate: ${report.differences.length} difference(s) in the MRR ledger; run again with --repair to close them\n`,
    );
    process.exitCode = 1;
  }
}

/** `analytics backfill`: counts the subscriptions older than the MRR ledger, reading them from Stripe. */
export async function analyticsBackfill(options: { app?: string }): Promise<void> {
  printJson(await withDatabase((services) => services.mrrBackfill.backfill(ADMIN, { appId: options.app })));
}

/** `stripe-emulator`: the emulator as its own process, for a Tollgate started with STRIPE_API_BASE. */
export async function stripeEmulator(options: EmulatorOptions): Promise<void> {
  const config = loadConfig();
  const secret = options.webhookSecret ?? config.stripe.webhookSecret ?? randomSecret('whsec_', 24);
  const webhookUrl = options.webhookUrl ?? `${config.publicBaseUrl}/v1/webhooks/stripe`;
  const port = options.port !== undefined ? Number(options.port) : config.stripe.emulatorPort;
  const emulator = await StripeEmulator.start({
    port,
    host: config.host,
    webhook: { url: webhookUrl, secret },
    logger: loggerFor(config),
    stateFile: options.state,
  }).catch((error: unknown) => {
    const variable = options.port !== undefined ? '--port' : 'STRIPE_EMULATOR_PORT';
    throw listenFailure(error, { port, host: config.host, variable });
  });
  process.stdout.write(
    [
      '',
      `  Stripe emulator   ${emulator.url}`,
      `  Webhooks to       ${webhookUrl}`,
      `  Webhook secret    ${secret}`,
      '',
      `  Start Tollgate with STRIPE_API_BASE=${emulator.url} STRIPE_WEBHOOK_SECRET=${secret}`,
      '',
    ].join('\n'),
  );
  const stop = () => {
    emulator.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
