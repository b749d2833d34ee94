import { RequestContext } from '@mikro-orm/core';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type EntityManager, MikroORM, type Options } from '@mikro-orm/postgresql';
import { migrationsList } from '../migrations/index.js';
import { ApiKey } from './modules/apps/api-key.entity.js';
import { App } from './modules/apps/app.entity.js';
import { MagicLinkRequest } from './modules/auth/magic-link-request.entity.js';
import { MagicLinkToken } from './modules/auth/magic-link-token.entity.js';
import { Session } from './modules/auth/session.entity.js';
import { Customer } from './modules/customers/customer.entity.js';
import { Organization, OrganizationMember } from './modules/organizations/organization.entity.js';
import { Plan } from './modules/plans/plan.entity.js';
import { ProcessedEvent } from './modules/subscriptions/processed-event.entity.js';
import { Subscription } from './modules/subscriptions/subscription.entity.js';

export const ENTITIES = [
  App,
  ApiKey,
  Customer,
  Session,
  MagicLinkToken,
  MagicLinkRequest,
  Plan,
  Subscription,
  Organization,
  OrganizationMember,
  ProcessedEvent,
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
    // A forgotten request context must fail loudly rather than share one identity map between requests.
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: false,
    pool: { min: 0, max: 20 },
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

/** Applies every pending migration; returns the names applied. */
export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((m) => m.name);
}

/** Runs `fn` in a fresh unit of work (an EntityManager fork), as every HTTP request does. */
export function withContext<T>(orm: Orm, fn: () => Promise<T>): Promise<T> {
  return RequestContext.create(orm.em, fn);
}
