#!/usr/bin/env node
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { systemClock } from './core/clock.js';
import { connect, migrate, withContext } from './core/db.js';
import { DomainError } from './core/errors.js';
import { createLogger } from './core/logger.js';
import { ADMIN } from './core/principal.js';
import { createMailer } from './modules/email/email.js';
import { MemoryRateLimitStore } from './modules/rate-limits/rate-limit-store.js';
import { openDatabase, type RunningServer, startServer } from './server.js';
import { cliPaymentProvider } from './modules/payments/payments.runtime.js';
import { createServices } from './services.js';

const USAGE = `Usage: tollgate <command> [options]

Commands:
  serve                                        start the HTTP service (default)
  migrate                                      apply pending database migrations and exit
  apps create --name NAME [--callback-url URL]  create an app; prints {"appId","apiKey"} as JSON
  keys create --app APP_ID                     create another API key; prints {"keyId","apiKey"} as JSON
`;

function printBanner(server: RunningServer): void {
  const lines = [
    '',
    '  Tollgate is running',
    '',
    `  REST API     ${server.url}/v1`,
    `  GraphiQL     ${server.url}/graphql`,
    `  Admin token  ${server.adminToken}`,
  ];
  if (!server.deps.config.production) lines.push(`  Dev mailbox  ${server.url}/dev/mailbox`);
  if (server.demo) {
    lines.push(
      '',
      '  A demo app was created (shown on this first start only):',
      `  App id       ${server.demo.appId}`,
      `  API key      ${server.demo.apiKey}`,
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
      () => {
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
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
  const database = await openDatabase(config, logger);
  const orm = await connect(database.url);
  try {
    await migrate(orm);
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
    });
    return await withContext(orm, () => fn(services));
  } finally {
    await orm.close(true);
    await database.embedded?.stop();
  }
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', sub, ...rest] = argv;
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
  process.stderr.write(`Unknown command: ${argv.join(' ')}\n\n${USAGE}`);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DomainError) {
    process.stderr.write(`tollgate: ${error.message}\n`);
  } else if (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`tollgate: ${error.message}\n\n${USAGE}`);
  } else {
    process.stderr.write(
      `tollgate: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
