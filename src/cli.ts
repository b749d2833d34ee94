import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { systemClock } from './core/clock.js';
import { DomainError, ValidationError } from './core/errors.js';
import { ADMIN } from './core/principal.js';
import { listenFailure, StartupError } from './core/startup-errors.js';
import { randomSecret } from './core/tokens.js';
import { migrate, withContext } from './db.js';
import { JobQueue } from './infra/job-queue.js';
import { loggerFor } from './infra/logger.js';
import { createMailer } from './modules/email/email.js';
import { cliPaymentProvider } from './modules/payments/payments.runtime.js';
import { MemoryRateLimitStore } from './modules/rate-limits/rate-limit-store.js';
import { connectDatabase, openDatabase, type RunningServer, startServer } from './server.js';
import { createServices } from './services.js';
import { StripeEmulator } from './stripe-emulator/stripe-emulator.js';
import { runBeforeExit } from './telemetry/shutdown.js';

const USAGE = `Usage: tollgate <command> [options]

Commands:
  serve                                        start the HTTP service
  migrate                                      apply pending database migrations and exit
  apps create --name NAME [--callback-url URL]  create an app; prints {"appId","apiKey"} as JSON
  keys create --app APP_ID                     create another API key; prints {"keyId","apiKey"} as JSON
  plans upsert --app APP_ID --id SLUG --name NAME [--price PRICE_ID | --amount CENTS [--currency usd]
               [--interval month]] [--trial-days N] [--features JSON] [--default]
                                               create or change a plan; --amount first creates the price
                                               at Stripe (or the emulator); prints the plan as JSON
  sync --app APP_ID                            re-read the Stripe subscriptions of every customer and
                                               organization of the app and apply them (as the periodic
                                               reconcile does); prints what changed as JSON
  stripe-emulator [--port N] [--webhook-url URL] [--webhook-secret whsec_…] [--state FILE]
                                               run the bundled Stripe emulator on its own (default port
                                               STRIPE_EMULATOR_PORT, 12111)
  help                                         print this text

JSON commands print only their JSON on stdout; messages go to stderr. Exit codes: 0 done, 1 failed
(one line on stderr says why), 2 usage error (no command, an unknown command or option).
`;

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
  lines.push('');
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const server = await startServer(config);
  printBanner(server);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
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
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

/** Runs a one-shot command against the configured database with the operator's authority. */
async function withDatabase<T>(fn: (services: ReturnType<typeof createServices>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // On stderr: a JSON command's stdout is its JSON and nothing else.
  const logger = loggerFor(config, { level: process.env.LOG_LEVEL ?? 'warn', toStderr: true });
  const database = await openDatabase(config, logger);
  const orm = await connectDatabase(database);
  let jobs: JobQueue | undefined;
  try {
    await migrate(orm);
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
    return await withContext(orm, () => fn(services));
  } finally {
    await jobs?.stop();
    await orm.close(true);
    await database.embedded?.stop();
  }
}

/** `plans upsert`: optionally creates the price at Stripe first, then upserts the plan as the operator. */
async function upsertPlanCommand(services: ReturnType<typeof createServices>, args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      app: { type: 'string' },
      id: { type: 'string' },
      name: { type: 'string' },
      price: { type: 'string' },
      amount: { type: 'string' },
      currency: { type: 'string' },
      interval: { type: 'string' },
      'trial-days': { type: 'string' },
      features: { type: 'string' },
      default: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.price && values.amount) throw new ValidationError('give either --price or --amount, not both');
  let features: unknown;
  if (values.features !== undefined) {
    try {
      features = JSON.parse(values.features);
    } catch {
      throw new ValidationError('--features must be a JSON object, e.g. \'{"projects": 10, "sso": true}\'');
    }
  }
  const price = values.amount
    ? await services.plans.createPlanPrice(ADMIN, {
        productName: values.name ?? values.id ?? 'Plan',
        unitAmount: Number(values.amount),
        ...(values.currency ? { currency: values.currency } : {}),
        ...(values.interval ? { interval: values.interval } : {}),
      })
    : undefined;
  const plan = await services.plans.upsertPlan(ADMIN, values.app ?? '', {
    id: values.id,
    name: values.name,
    ...(price ? { stripePriceId: price.id } : values.price ? { stripePriceId: values.price } : {}),
    ...(values['trial-days'] !== undefined ? { trialDays: Number(values['trial-days']) } : {}),
    ...(features !== undefined ? { features } : {}),
    ...(values.default ? { isDefault: true } : {}),
  });
  return {
    id: plan.slug,
    name: plan.name,
    stripePriceId: plan.stripePriceId,
    trialDays: plan.trialDays,
    features: plan.features,
    isDefault: plan.isDefault,
  };
}

/** `stripe-emulator`: the emulator as its own process, for a Tollgate started with STRIPE_API_BASE. */
async function runStripeEmulator(args: string[]): Promise<void> {
  const config = loadConfig();
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      'webhook-url': { type: 'string' },
      'webhook-secret': { type: 'string' },
      state: { type: 'string' },
    },
    strict: true,
  });
  const secret = values['webhook-secret'] ?? config.stripe.webhookSecret ?? randomSecret('whsec_', 24);
  const webhookUrl = values['webhook-url'] ?? `${config.publicBaseUrl}/v1/webhooks/stripe`;
  const port = values.port !== undefined ? Number(values.port) : config.stripe.emulatorPort;
  const emulator = await StripeEmulator.start({
    port,
    host: config.host,
    webhook: { url: webhookUrl, secret },
    logger: loggerFor(config),
    stateFile: values.state,
  }).catch((error: unknown) => {
    const variable = values.port !== undefined ? '--port' : 'STRIPE_EMULATOR_PORT';
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

async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  // A bare `tollgate` asks for nothing: starting a server (and a database) would surprise more than help.
  if (command === undefined) {
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  if (command === 'serve') return serve();
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  if (command === 'migrate') {
    await withDatabase(async () => undefined);
    process.stdout.write('migrations: up to date\n');
    return;
  }
  if (command === 'apps' && sub === 'create') {
    const { values } = parseArgs({
      args: rest,
      options: { name: { type: 'string' }, 'callback-url': { type: 'string', multiple: true } },
      strict: true,
    });
    const result = await withDatabase(async (services) => {
      const { app, apiKey } = await services.apps.createApp(ADMIN, {
        name: values.name,
        ...(values['callback-url'] ? { allowedCallbackUrls: values['callback-url'].join('\n') } : {}),
      });
      return { appId: app.id, apiKey: apiKey.secret };
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  if (command === 'keys' && sub === 'create') {
    const { values } = parseArgs({ args: rest, options: { app: { type: 'string' } }, strict: true });
    const result = await withDatabase(async (services) => {
      const { key, secret } = await services.apps.createApiKey(ADMIN, values.app ?? '');
      return { keyId: key.id, apiKey: secret };
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  if (command === 'plans' && sub === 'upsert') {
    const plan = await withDatabase((services) => upsertPlanCommand(services, rest));
    process.stdout.write(`${JSON.stringify(plan)}\n`);
    return;
  }
  if (command === 'sync') {
    const { values } = parseArgs({
      args: [sub, ...rest].filter((a): a is string => a !== undefined),
      options: { app: { type: 'string' } },
      strict: true,
    });
    const report = await withDatabase((services) =>
      services.subscriptionReconcile.reconcileApp(ADMIN, values.app ?? ''),
    );
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  if (command === 'stripe-emulator')
    return runStripeEmulator([sub, ...rest].filter((a): a is string => a !== undefined));
  process.stderr.write(`Unknown command: ${argv.join(' ')}\n\n${USAGE}`);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof StartupError || error instanceof DomainError) {
    process.stderr.write(`tollgate: ${error.message}\n`);
  } else if (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`tollgate: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  } else {
    process.stderr.write(
      `tollgate: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
