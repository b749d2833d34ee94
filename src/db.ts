import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type EntityManager, MikroORM, type Options } from '@mikro-orm/postgresql';
import pg from 'pg';
import { migrationsList } from '../migrations/index.js';
import type { DatabaseTimeouts } from './config.js';
import { noteStatement } from './infra/round-trips.js';
import { currentUnitOfWork, withUnitOfWork } from './infra/unit-of-work.js';
import { MrrDaily, MrrMovement } from './modules/analytics/mrr-movement.entity.js';
import { ApiKey } from './modules/apps/api-key.entity.js';
import { App } from './modules/apps/app.entity.js';
import { AuditEvent } from './modules/audit/audit-event.entity.js';
import { AuditTrail } from './modules/audit/audit-trail.subscriber.js';
import { MagicLinkRequest } from './modules/auth/magic-link-request.entity.js';
import { MagicLinkToken } from './modules/auth/magic-link-token.entity.js';
import { Session } from './modules/auth/session.entity.js';
import { OpenCheckout } from './modules/checkout/open-checkout.entity.js';
import { Customer } from './modules/customers/customer.entity.js';
import { CustomerCount } from './modules/customers/customer-count.entity.js';
import { CustomerSubjects } from './modules/customers/customer-subjects.subscriber.js';
import { EntitlementSigningKey } from './modules/entitlement-tokens/signing-key.entity.js';
import { IdempotencyRecord } from './modules/idempotency/idempotency-record.entity.js';
import { CreditBucket } from './modules/metering/credit-bucket.entity.js';
import { UsageRecord } from './modules/metering/usage-record.entity.js';
import { Operator, OperatorSession, OperatorSignInToken } from './modules/operators/operator.entity.js';
import { OrganizationInvitation } from './modules/organizations/invitation.entity.js';
import { Organization, OrganizationMember } from './modules/organizations/organization.entity.js';
import { Plan } from './modules/plans/plan.entity.js';
import { ProcessedEvent } from './modules/subscriptions/processed-event.entity.js';
import { Subscription } from './modules/subscriptions/subscription.entity.js';
import { WebhookAttempt, WebhookDelivery, WebhookEvent } from './modules/webhooks/webhook-delivery.entity.js';
import { WebhookEndpoint } from './modules/webhooks/webhook-endpoint.entity.js';

export const ENTITIES = [
  App,
  ApiKey,
  Customer,
  CustomerCount,
  Session,
  MagicLinkToken,
  MagicLinkRequest,
  Plan,
  Subscription,
  Organization,
  OrganizationMember,
  OrganizationInvitation,
  ProcessedEvent,
  WebhookEndpoint,
  WebhookEvent,
  WebhookDelivery,
  WebhookAttempt,
  IdempotencyRecord,
  CreditBucket,
  UsageRecord,
  OpenCheckout,
  EntitlementSigningKey,
  MrrMovement,
  MrrDaily,
  Operator,
  OperatorSignInToken,
  OperatorSession,
  AuditEvent,
];

export type Orm = MikroORM;
export type { EntityManager };

/** MikroORM configuration shared by the server, the CLI, the migration scripts and the tests. */
export function ormOptions(clientUrl: string, overrides: Partial<Options> = {}): Options {
  return defineConfig({
    clientUrl,
    entities: ENTITIES,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    // Every customer a request touches is noted as one of its subjects (src/core/subjects.ts).
    subscribers: [new CustomerSubjects(), new AuditTrail()],
    // A forgotten request context must fail loudly rather than share one identity map between requests.
    allowGlobalContext: false,
    // Each request's fork, made on first use (src/infra/unit-of-work.ts).
    context: currentUnitOfWork,
    forceUtcTimezone: true,
    debug: false,
    pool: { min: 0, max: 20 },
    // Never create a missing database on connecting: a misspelt DATABASE_URL must fail (naming it), not
    // start on an empty database. Creating one is `tollgate db create` (src/infra/database-admin.ts).
    ensureDatabase: false,
    // The database functions the migrations create by hand (the metered consumption, see
    // migrations/Migration20261126150000.ts) are not entity metadata: the schema diff must leave them be.
    schemaGenerator: { ignoreRoutines: true },
    migrations: {
      tableName: 'mikro_orm_migrations',
      migrationsList,
      snapshot: false,
      transactional: true,
      allOrNothing: true,
      path: 'migrations',
      pathTs: 'migrations',
      emit: 'ts',
      silent: true,
    },
    ...overrides,
  });
}

export async function connect(clientUrl: string, overrides: Partial<Options> = {}): Promise<Orm> {
  return MikroORM.init(ormOptions(clientUrl, overrides));
}

/** How the server's connections are named in `pg_stat_activity`. */
export const APPLICATION_NAME = 'tollgate';

/** pg's client-side query timeout rejects with this message (and no code). */
const QUERY_TIMEOUT_MESSAGE = 'Query read timeout';

/** What pg-pool lends a client with: calling it gives the client back (with an error: to be destroyed). */
type PoolRelease = (error?: Error | boolean) => void;

/**
 * A pg client that gives up its connection when a query times out on the client side. pg answers the
 * caller but leaves the query on the wire, so the connection's next user would first wait for (and, on
 * a server that wakes up, read past) someone else's late answer, and a transaction around the query
 * would wait again for its rollback. So the client ends its connection at once and gives itself back
 * to the pool to be destroyed, and does the same when its connection dies under it.
 *
 * Giving itself back matters because kysely returns a transaction's connection only after a successful
 * COMMIT or ROLLBACK: on a dead connection the rollback fails and the pool slot would be lost for good,
 * until no request could get a connection even after the database recovered. pg-pool lends a client by
 * assigning it a fresh `release`; the accessor below keeps that function so the client can call it
 * itself, exactly once, and turns the holder's later call into a no-op.
 */
function timeoutAwareClient(connectTimeoutMs: number): typeof pg.Client {
  return class TimeoutAwareClient extends pg.Client {
    #poolRelease: PoolRelease | undefined;

    constructor(config?: pg.ClientConfig) {
      // pg-pool keeps the password non-enumerable, so a spread alone would lose it.
      super({ ...config, password: config?.password, connectionTimeoutMillis: connectTimeoutMs });
      this.once('end', () => this.#giveBack(new Error('connection ended')));
    }

    set release(release: PoolRelease) {
      this.#poolRelease = release;
    }

    get release(): PoolRelease {
      return (error) => this.#giveBack(error);
    }

    // pg's `query` has a dozen overloads; every one funnels through here unchanged.
    override query(...args: any[]): any {
      noteStatement();
      const last = args.at(-1);
      if (typeof last === 'function') {
        args[args.length - 1] = (error: unknown, result: unknown) => {
          this.#discardAfter(error);
          last(error, result);
        };
      }
      const result = (super.query as (...a: any[]) => unknown)(...args);
      if (result instanceof Promise) result.catch((error: unknown) => this.#discardAfter(error));
      return result;
    }

    #discardAfter(error: unknown): void {
      if (!(error instanceof Error) || error.message !== QUERY_TIMEOUT_MESSAGE) return;
      // With a query still on the wire, pg destroys the socket instead of saying goodbye.
      this.end().catch(() => undefined);
      this.#giveBack(error);
    }

    #giveBack(error?: Error | boolean): void {
      const release = this.#poolRelease;
      this.#poolRelease = undefined;
      release?.(error);
    }
  };
}

/**
 * Pool and session options that bound every wait for PostgreSQL (see DatabaseTimeouts). MikroORM's
 * PostgreSQL driver builds its `pg.Pool` from the connection URL plus `driverOptions`, merged over its
 * own (host, credentials, `pool.min/max`, type parsers), and kysely borrows clients with `pool.connect()`;
 * so these are pg-pool/pg options: `connectionTimeoutMillis` is pg-pool's acquire bound (the wait in its
 * queue and the opening of a new client), `Client` opens connections under the shorter connect bound and
 * discards them after a client-side timeout, and the server-side timeouts travel in the startup packet.
 */
export function timeoutOptions(timeouts: DatabaseTimeouts): Partial<Options> {
  return {
    driverOptions: {
      connectionTimeoutMillis: timeouts.acquireTimeoutMs,
      Client: timeoutAwareClient(timeouts.connectTimeoutMs),
      query_timeout: timeouts.queryTimeoutMs,
      statement_timeout: timeouts.statementTimeoutMs,
      idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
      application_name: APPLICATION_NAME,
    },
  };
}

/** Whether a trivial query answers within `timeoutMs` (a closed or stuck connection is not ready). */
export async function databaseReady(orm: Orm, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([orm.isConnected().catch(() => false), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Applies pending migrations on connections of their own without the request timeouts: a migration may
 * legitimately run for minutes, which the server's query bound would cut short. Returns the names applied.
 */
export async function migrateUnbounded(orm: Orm): Promise<string[]> {
  if ((await orm.migrator.getPending()).length === 0) return [];
  const unbounded = await connect(orm.config.get('clientUrl')!, { pool: { min: 0, max: 2 } });
  try {
    return await migrate(unbounded);
  } finally {
    await unbounded.close(true);
  }
}

/** Applies every pending migration; returns the names applied. */
export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((m) => m.name);
}

/** The `pg` pool under the ORM: every statement MikroORM runs checks a connection out of it. */
export async function connectionPool(orm: Orm): Promise<pg.Pool> {
  return (await orm.em.getConnection().getNativeClient()) as pg.Pool;
}

/** Runs `fn` in a fresh unit of work (an EntityManager fork), as every HTTP request does. */
export function withContext<T>(orm: Orm, fn: () => Promise<T>): Promise<T> {
  return withUnitOfWork(orm.em, fn);
}
