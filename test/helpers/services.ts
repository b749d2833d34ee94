import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config.js';
import type { Clock } from '../../src/core/clock.js';
import { systemClock } from '../../src/core/clock.js';
import type { DomainError } from '../../src/core/errors.js';
import { ADMIN, type ApiKeyPrincipal, type Principal } from '../../src/core/principal.js';
import { connect, withContext } from '../../src/db.js';
import { JobQueue } from '../../src/infra/job-queue.js';
import { createLogger } from '../../src/infra/logger.js';
import { DevMailbox } from '../../src/modules/email/dev-mailbox.js';
import { createMailer } from '../../src/modules/email/email.js';
import { startPayments } from '../../src/modules/payments/payments.runtime.js';
import { createRateLimitStore } from '../../src/modules/rate-limits/rate-limit-store.js';
import type { RunningServer } from '../../src/server.js';
import { createServices, type Deps } from '../../src/services.js';

/** What fixtures need of a running Tollgate: its dependencies, its services and where payments go. */
export type Core = Pick<RunningServer, 'deps' | 'services' | 'payments'>;

/** Tollgate's service graph on the test database, with no HTTP server in front of it. */
export interface ServiceCore extends Core {
  /** The development mailer: what the services e-mailed, newest first. */
  readonly mailbox: DevMailbox;
  /** Runs `fn` in its own unit of work, as the server does for each request. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** A new app (through the admin use case) and the principal of its first API key. */
  createApp(settings?: Record<string, unknown>): Promise<{ appId: string; principal: ApiKeyPrincipal }>;
  /** The principal a request with `Bearer <token>` would have (a session token, an API key). */
  principalOf(token: string): Promise<Principal>;
  close(): Promise<void>;
}

/**
 * Builds the services the way src/server.ts does (src/services.ts's `createServices` over the same
 * dependencies: the run's database, the dev mailbox, in-process rate limits, the bundled Stripe
 * emulator), so service tests call the core directly with a Principal, as both transports do.
 */
export async function startServices(options: { readonly clock?: Clock } = {}): Promise<ServiceCore> {
  const config = loadConfig({
    DATABASE_URL: process.env.TEST_DATABASE_URL,
    ADMIN_TOKEN: `tg_admin_test_${randomBytes(16).toString('hex')}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    STRIPE_EMULATOR_PORT: '0',
    // A queue of its own: no other test file's workers take this one's jobs.
    JOB_QUEUE_SCHEMA: `jobs_${randomBytes(6).toString('hex')}`,
  });
  const logger = createLogger(config.logLevel);
  // The run's database is migrated once by test/global-setup.js.
  const orm = await connect(config.databaseUrl!);
  const mailer = createMailer(config, logger);
  if (!(mailer instanceof DevMailbox)) throw new Error('service tests expect the dev mailbox (no SMTP_URL)');
  const rateLimitStore = await createRateLimitStore({
    redisUrl: undefined,
    keyPrefix: config.rateLimits.keyPrefix,
    logger,
  });
  const payments = await startPayments(config, { logger, persistEmulatorState: false });
  const jobs = await JobQueue.start({
    connectionString: config.databaseUrl!,
    logger,
    schema: config.jobQueue.schema,
    superviseIntervalSeconds: config.jobQueue.superviseIntervalSeconds,
    workers: false,
    maxConnections: 2,
  });
  const deps: Deps = {
    config,
    orm,
    clock: options.clock ?? systemClock,
    logger,
    adminToken: config.adminToken!,
    mailer,
    rateLimitStore,
    payments: payments.provider,
    jobs,
  };
  const services = createServices(deps);
  const run = <T>(fn: () => Promise<T>) => withContext(orm, fn);
  return {
    deps,
    services,
    payments,
    mailbox: mailer,
    run,
    async createApp(settings = {}) {
      const { app, apiKey } = await run(() =>
        services.apps.createApp(ADMIN, { name: `svc-${randomBytes(4).toString('hex')}`, ...settings }),
      );
      return { appId: app.id, principal: { kind: 'apiKey', appId: app.id, apiKeyId: apiKey.key.id } };
    },
    principalOf: (token) => run(() => services.credentials.resolve(`Bearer ${token}`)),
    async close() {
      await jobs.stop();
      await payments.close();
      await services.changes.close();
      await rateLimitStore.close();
      await orm.close(true);
      mailer.close();
    },
  };
}

/**
 * Awaits a call that must fail with a domain error of `type` and exactly `message` (a RegExp to match
 * part of it); returns the error for further checks. Another error, or success, fails the test.
 */
export async function expectDomainError<E extends DomainError>(
  call: Promise<unknown>,
  type: abstract new (...args: any[]) => E,
  message: string | RegExp,
): Promise<E> {
  let outcome: unknown;
  try {
    outcome = await call;
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    if (typeof message === 'string') expect((error as E).message).toBe(message);
    else expect((error as E).message).toMatch(message);
    return error as E;
  }
  throw new Error(`expected a ${type.name}, but the call succeeded with ${JSON.stringify(outcome)}`);
}
