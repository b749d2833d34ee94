import type { MikroORM } from '@mikro-orm/postgresql';
import { type Change, type ChangeFeed, FeedCache } from '../../core/change-feed.js';
import { ForbiddenError, NotFoundError, ValidationError } from '../../core/errors.js';
import { type Principal, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { ENTITLING_STATUSES } from '../subscriptions/subscription.entity.js';
import { entitlementQuerySchema, featureSchema } from './entitlements.schemas.js';
import type { Features, FeatureValue } from './plan.entity.js';

/** Whose entitlements: a customer's own, or an organization's (shared by its members). */
export type EntitlementContext =
  | { readonly appId: string; readonly customerId: string; readonly organizationId?: undefined }
  | { readonly appId: string; readonly organizationId: string; readonly customerId?: undefined };

function contextKey(appId: string, kind: 'c' | 'o', id: string): string {
  return `${appId}|${kind}|${id}`;
}

/** Cached entitlements a change makes stale: a subscription's context, or a whole app for a plan. */
function staleBy(change: Change): string[] {
  switch (change.t) {
    case 'subscription':
      return [
        ...(change.customer !== null ? [`ctx:${contextKey(change.app, 'c', change.customer)}`] : []),
        ...(change.organization !== null ? [`ctx:${contextKey(change.app, 'o', change.organization)}`] : []),
      ];
    case 'plan':
      return [`app:${change.app}`];
    default:
      return [];
  }
}

export interface Entitlements {
  readonly planName: string | null;
  readonly features: Features;
}

export interface FeatureCheck {
  readonly feature: string;
  readonly allowed: boolean;
  readonly value: FeatureValue | null;
}

export const NO_ENTITLEMENTS: Entitlements = Object.freeze({ planName: null, features: Object.freeze({}) });

const ENTITLING = ENTITLING_STATUSES.map((s) => `'${s}'`).join(', ');

/**
 * The plan of the context's newest entitling subscription, else the app's default plan: one statement,
 * one round trip. A personal context never sees organization subscriptions, whoever paid for them.
 */
const PLAN_OF_CUSTOMER = `
  select p.name, p.features from plan p
   where p.id = coalesce(
     (select s.plan_id from subscription s
       where s.app_id = ? and s.customer_id = ? and s.organization_id is null and s.status in (${ENTITLING})
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = ? and d.is_default limit 1))`;

const PLAN_OF_ORGANIZATION = `
  select p.name, p.features from plan p
   where p.id = coalesce(
     (select s.plan_id from subscription s
       where s.app_id = ? and s.organization_id = ? and s.status in (${ENTITLING})
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = ? and d.is_default limit 1))`;

/** A feature grants access when it is `true`, a number above 0 or a non-empty string. */
export function isAllowed(value: FeatureValue | null): boolean {
  return (
    value === true || (typeof value === 'number' && value > 0) || (typeof value === 'string' && value !== '')
  );
}

/**
 * Entitlements of a context: the plan of its newest entitling subscription (trialing, active,
 * past_due), else the app's default plan, else `{planName: null, features: {}}`. Resolved values are
 * cached per context and dropped on every instance when a subscription or plan change commits.
 */
export class EntitlementsService {
  readonly #cache: FeedCache<Entitlements>;

  constructor(
    private readonly orm: MikroORM,
    changes: ChangeFeed,
  ) {
    this.#cache = new FeedCache(changes, staleBy);
  }

  /** Entitlements of a context the caller has already authorized (used by login, session and checks). */
  async resolve(context: EntitlementContext): Promise<Entitlements> {
    // Inside a transaction the caller may have written rows not yet committed: read them, cache nothing.
    if (this.orm.em.isInTransaction()) return this.#load(context);
    const key =
      context.organizationId !== undefined
        ? contextKey(context.appId, 'o', context.organizationId)
        : contextKey(context.appId, 'c', context.customerId);
    return this.#cache.get(
      key,
      () => this.#load(context),
      () => [`app:${context.appId}`, `ctx:${key}`],
    );
  }

  /** `GET /v1/entitlements`: the session's context, or with an API key `customerId`/`organizationId`. */
  async getEntitlements(principal: Principal, query: unknown): Promise<Entitlements> {
    return this.resolve(await this.#contextOf(principal, query));
  }

  /** `GET /v1/entitlements/check/:feature`: whether the context's plan grants `feature`, and its value. */
  async checkFeature(principal: Principal, feature: unknown, query: unknown): Promise<FeatureCheck> {
    const name = parseInput(featureSchema, feature);
    const { features } = await this.getEntitlements(principal, query);
    const value = Object.hasOwn(features, name) ? features[name]! : null;
    return { feature: name, allowed: isAllowed(value), value };
  }

  async #load(context: EntitlementContext): Promise<Entitlements> {
    const em = this.orm.em;
    const [sql, id] =
      context.organizationId !== undefined
        ? [PLAN_OF_ORGANIZATION, context.organizationId]
        : [PLAN_OF_CUSTOMER, context.customerId];
    const rows = await em
      .getConnection()
      .execute<{ name: string; features: Features }[]>(
        sql,
        [context.appId, id, context.appId],
        'all',
        em.getTransactionContext(),
      );
    const plan = rows[0];
    return plan
      ? Object.freeze({ planName: plan.name, features: Object.freeze(plan.features) })
      : NO_ENTITLEMENTS;
  }

  /** Whose entitlements a request asks for; an API key names a customer or organization of its own app. */
  async #contextOf(principal: Principal, query: unknown): Promise<EntitlementContext> {
    const caller = requireAppPrincipal(principal);
    if (caller.kind === 'session') {
      if (query && typeof query === 'object' && Object.keys(query).length > 0) {
        throw new ValidationError(
          'a session token uses its own context: customerId and organizationId are for API keys',
        );
      }
      return caller.organizationId !== undefined
        ? { appId: caller.appId, organizationId: caller.organizationId }
        : { appId: caller.appId, customerId: caller.customerId };
    }
    const { customerId, organizationId } = parseInput(entitlementQuerySchema, query ?? {});
    const connection = this.orm.em.getConnection();
    if (customerId !== undefined) {
      const found = await connection.execute('select 1 from customer where id = ? and app_id = ?', [
        customerId,
        caller.appId,
      ]);
      if (found.length === 0) throw new NotFoundError('Customer', customerId);
      return { appId: caller.appId, customerId };
    }
    const [row] = await connection.execute<{ enabled: boolean; found: boolean }[]>(
      `select a.organizations_enabled as enabled, exists (select 1 from organization o
          where o.id = ? and o.app_id = a.id) as found
         from app a where a.id = ?`,
      [organizationId, caller.appId],
    );
    if (!row?.enabled) throw new ForbiddenError('Organizations are not enabled for this app');
    if (!row.found) throw new NotFoundError('Organization', organizationId);
    return { appId: caller.appId, organizationId: organizationId! };
  }
}
