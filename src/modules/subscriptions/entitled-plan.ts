import type { EntityManager } from '@mikro-orm/postgresql';
import type { Features } from '../plans/plan.entity.js';
import type { PlanSeats } from '../plans/plan-seats.js';
import type { BillingContext } from './billing-context.js';
import { ENTITLING_STATUSES_SQL } from './subscription.entity.js';

/** What a context is entitled to: its plan's name and features (`null`/`{}` without any plan). */
export interface EntitledPlan {
  readonly planName: string | null;
  readonly features: Features;
  /**
   * The current period end of the subscription that entitles (its billing anchor, from which metered
   * features' billing periods are derived); null on the default plan or when unknown.
   */
  readonly periodEnd?: Date | null;
  /** The plan's seats of an organization (`loadEntitledPlanWithAnchor` only); null when not counted. */
  readonly seats?: PlanSeats | null;
}

/** SQL expressions naming whose entitled plan to find, and a subscription to read in another state. */
export interface EntitledPlanRefs {
  readonly appId: string;
  /** The customer's or the organization's id. */
  readonly ownerId: string;
  /** The subscription read with `overrideStatus` and `overridePlanId` in place of its stored ones. */
  readonly overrideId: string;
  readonly overrideStatus: string;
  readonly overridePlanId: string;
}

/**
 * The id (primary key) of the plan an owner is entitled to, as one scalar SQL expression: the plan of
 * its newest entitling subscription, else the app's default plan, else null. A personal context never
 * sees organization subscriptions, whoever paid for them. The one definition of that rule in SQL, used
 * as a statement of its own (`loadEntitledPlan`) and inside the Stripe receiver's statement.
 */
export function entitledPlanIdSql(owner: 'customer' | 'organization', refs: EntitledPlanRefs): string {
  const whose =
    owner === 'customer'
      ? `s.customer_id = ${refs.ownerId} and s.organization_id is null`
      : `s.organization_id = ${refs.ownerId}`;
  return `coalesce(
     (select case when s.id = ${refs.overrideId} then ${refs.overridePlanId} else s.plan_id end
        from subscription s
       where s.app_id = ${refs.appId} and ${whose}
         and (case when s.id = ${refs.overrideId} then ${refs.overrideStatus} else s.status end) in (${ENTITLING_STATUSES_SQL})
       order by s.created_at desc, s.id desc limit 1),
     (select d.id from plan d where d.app_id = ${refs.appId} and d.is_default limit 1))`;
}

/**
 * The plan of the context's newest entitling subscription, else the app's default plan: one statement,
 * one round trip. The subscription named first is read with the status and plan given after it (its
 * state before a change, for comparing); no subscription has the id ''.
 */
function planOf(owner: 'customer' | 'organization'): string {
  const whose =
    owner === 'customer' ? 's.customer_id = ? and s.organization_id is null' : 's.organization_id = ?';
  const id = entitledPlanIdSql(owner, {
    appId: '?',
    ownerId: '?',
    overrideId: 'o.id',
    overrideStatus: 'o.status',
    overridePlanId: 'o.plan_id',
  });
  return `
  with o as (select ?::text as id, ?::text as status, ?::text as plan_id)
  select p.name, p.features, p.seats, (extract(epoch from sp.current_period_end) * 1000)::float8 as period_end_ms
    from o, plan p
    left join lateral (
      select s.current_period_end from subscription s
       where s.app_id = p.app_id and ${whose} and s.plan_id = p.id and s.status in (${ENTITLING_STATUSES_SQL})
       order by s.created_at desc, s.id desc limit 1) sp on true
   where p.id = ${id}`;
}

const PLAN_OF_CUSTOMER = planOf('customer');
const PLAN_OF_ORGANIZATION = planOf('organization');

/** A subscription's state to read in place of its stored one. */
export interface SubscriptionStateOverride {
  readonly subscriptionId: string;
  readonly status: string;
  readonly planId: string;
}

/**
 * Reads the context's entitled plan through `em` (in its transaction, when it has one: the entitlements
 * service for its cache, and the subscription events to tell whether a change altered entitlements, with
 * `override` giving the changed subscription's state before the change).
 */
export async function loadEntitledPlan(
  em: EntityManager,
  context: BillingContext,
  override?: SubscriptionStateOverride,
): Promise<EntitledPlan> {
  const { planName, features } = await loadEntitledPlanWithAnchor(em, context, override);
  return { planName, features };
}

/** As `loadEntitledPlan`, with the entitling subscription's current period end (metered billing periods). */
export async function loadEntitledPlanWithAnchor(
  em: EntityManager,
  context: BillingContext,
  override?: SubscriptionStateOverride,
): Promise<EntitledPlan> {
  const [sql, id] =
    context.organizationId !== undefined
      ? [PLAN_OF_ORGANIZATION, context.organizationId]
      : [PLAN_OF_CUSTOMER, context.customerId];
  const rows = await em
    .getConnection()
    .execute<{ name: string; features: Features; seats: PlanSeats | null; period_end_ms: number | null }[]>(
      sql,
      [
        override?.subscriptionId ?? '',
        override?.status ?? '',
        override?.planId ?? '',
        id,
        context.appId,
        id,
        context.appId,
      ],
      'all',
      em.getTransactionContext(),
    );
  const row = rows[0];
  if (!row) return entitledPlanOf(row);
  return {
    ...entitledPlanOf(row),
    periodEnd: row.period_end_ms === null ? null : new Date(row.period_end_ms),
    seats: row.seats,
  };
}

/** What a context is entitled to, from its plan's row (none: no plan). */
export function entitledPlanOf(plan: { name: string; features: Features } | null | undefined): EntitledPlan {
  return plan ? { planName: plan.name, features: plan.features } : { planName: null, features: {} };
}
