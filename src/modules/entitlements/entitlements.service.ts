import type { MikroORM } from '@mikro-orm/postgresql';
import { type AppScope, type Principal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { CACHE_MAX_ENTRIES, type Change, type ChangeFeed, FeedCache } from '../../infra/change-feed.js';
import { inTransaction } from '../../infra/unit-of-work.js';
import type { CacheObserver } from '../../telemetry/metrics.js';
import { actingOnApp } from '../apps/app-rules.js';
import type { BalanceReader } from '../metering/balance-reader.js';
import type { Balance } from '../metering/ledger.js';
import { amountQuerySchema } from '../metering/metering.schemas.js';
import { entitlementFeatures, isMetered, type MeteredFeature } from '../plans/metered-feature.js';
import type { Features, FeatureValue } from '../plans/plan.entity.js';
import { type PlanSeats, seatLimit } from '../plans/plan-seats.js';
import { type BillingContext, billingContextOf, knownCustomers } from '../subscriptions/billing-context.js';
import { loadEntitledPlanWithAnchor } from '../subscriptions/entitled-plan.js';
import { featureSchema } from './entitlements.schemas.js';
import { loadEntitlementsVersion } from './entitlements-version.js';

/** Whose entitlements: a customer's own, or an organization's (shared by its members). */
export type EntitlementContext = BillingContext;

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
  /** A metered feature's live balance (`allowed` when it holds the amount asked for). */
  readonly balance?: Balance;
}

export const NO_ENTITLEMENTS: Entitlements = Object.freeze({ planName: null, features: Object.freeze({}) });

/**
 * A context's entitled plan as the cache keeps it: the entitlements as presented (a metered feature's
 * value is its limit) and, for metering, the metered definitions and the subscription's billing anchor.
 */
export interface EntitledState {
  readonly entitlements: Entitlements;
  readonly metered: Readonly<Record<string, MeteredFeature>>;
  readonly billingAnchor: Date | null;
  /** The entitlement version (`ev`, see entitlements-version.ts). */
  readonly version: number;
  /** The id (slug) of the entitled plan, or null. */
  readonly planId: string | null;
  /** The entitled plan's seats of an organization; null when the plan does not count them. */
  readonly seats: PlanSeats | null;
}

const NOTHING_ENTITLED: EntitledState = Object.freeze({
  entitlements: NO_ENTITLEMENTS,
  metered: Object.freeze({}),
  billingAnchor: null,
  version: 0,
  planId: null,
  seats: null,
});

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
  readonly #cache: FeedCache<EntitledState>;
  /** Customers an API key may ask about, so a check names a customer without a query. */
  readonly #customers: FeedCache<boolean>;

  constructor(
    private readonly orm: MikroORM,
    private readonly changes: ChangeFeed,
    observer?: CacheObserver,
    private readonly balances?: BalanceReader,
  ) {
    this.#cache = new FeedCache(changes, staleBy, CACHE_MAX_ENTRIES, observer);
    this.#customers = knownCustomers(changes);
  }

  /**
   * Entitlements of a context the caller has already authorized (used by login, session and checks).
   * `synced`: the caller's own change-feed barrier for this request, if it made one (see FeedCache.get).
   */
  async resolve(context: EntitlementContext, synced?: boolean): Promise<Entitlements> {
    return (await this.resolveState(context, synced)).entitlements;
  }

  /** The context's entitled state with its metered features (see `resolve`), for metering. */
  async resolveState(context: EntitlementContext, synced?: boolean): Promise<EntitledState> {
    // Inside a transaction the caller may have written rows not yet committed: read them, cache nothing.
    if (inTransaction(this.orm.em)) return this.#load(context);
    const key =
      context.organizationId !== undefined
        ? contextKey(context.appId, 'o', context.organizationId)
        : contextKey(context.appId, 'c', context.customerId);
    return this.#cache.get(
      key,
      () => this.#load(context),
      () => [`app:${context.appId}`, `ctx:${key}`],
      undefined,
      synced,
    );
  }

  /**
   * `GET /v1/entitlements`: the session's context, or with an API key `customerId`/`organizationId`
   * (the operator names the app, `scope`).
   */
  async getEntitlements(principal: Principal, query: unknown, scope?: AppScope): Promise<Entitlements> {
    const acting = await actingOnApp(this.orm.em, principal, scope);
    // One change-feed barrier for both cached lookups of the request.
    const synced = await this.changes.synced();
    return this.resolve(await billingContextOf(this.orm, acting, query, this.#customers, synced), synced);
  }

  /**
   * `GET /v1/entitlements/check/:feature`: whether the context's plan grants `feature`, and its value.
   * For a metered feature the value is its limit, `allowed` says whether the live balance holds
   * `amount` (default 1), and `balance` is that balance.
   */
  async checkFeature(
    principal: Principal,
    feature: unknown,
    query: unknown,
    scope?: AppScope,
    amountArg?: unknown,
  ): Promise<FeatureCheck> {
    const { amount: rawAmount, ...whose } = (query ?? {}) as Record<string, unknown>;
    const name = parseInput(featureSchema, feature);
    const amount = parseInput(amountQuerySchema, amountArg ?? rawAmount) ?? 1;
    const acting = await actingOnApp(this.orm.em, principal, scope);
    const synced = await this.changes.synced();
    const context = await billingContextOf(this.orm, acting, whose, this.#customers, synced);
    const state = await this.resolveState(context, synced);
    // A plan that counts seats answers `seats` with its limit (null: per seat without a cap).
    if (name === 'seats' && state.seats) {
      const limit = seatLimit(state.seats);
      return { feature: name, allowed: limit === null || limit > 0, value: limit };
    }
    const { features } = state.entitlements;
    const value = Object.hasOwn(features, name) ? features[name]! : null;
    if (this.balances && Object.hasOwn(state.metered, name)) {
      const balance = (await this.balances.one(context, state, name))!;
      // A feature with overage allows consumption past its balance (billed per unit).
      const overage = state.metered[name]!.overage !== undefined;
      return { feature: name, allowed: overage || balance.remaining >= amount, value, balance };
    }
    return { feature: name, allowed: isAllowed(value), value };
  }

  async #load(context: EntitlementContext): Promise<EntitledState> {
    const plan = await loadEntitledPlanWithAnchor(this.orm.em, context);
    const { version, planId } = await loadEntitlementsVersion(this.orm.em, context);
    if (plan.planName === null) return Object.freeze({ ...NOTHING_ENTITLED, version });
    const features = entitlementFeatures(plan.features);
    const metered: Record<string, MeteredFeature> = {};
    for (const [name, value] of Object.entries(plan.features)) {
      if (isMetered(value)) metered[name] = Object.freeze({ ...value });
    }
    return Object.freeze({
      entitlements: Object.freeze({ planName: plan.planName, features: Object.freeze(features) }),
      metered: Object.freeze(metered),
      billingAnchor: plan.periodEnd ?? null,
      version,
      planId,
      seats: plan.seats ?? null,
    });
  }
}
