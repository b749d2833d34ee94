import type { EntityManager } from '@mikro-orm/postgresql';
import type { Features } from '../plans/plan.entity.js';
import type { BillingContext } from './billing-context.js';
import { ENTITLING_STATUSES } from './subscription.entity.js';

/** What a context is entitled to: its plan's name and features (`null`/`{}` without any plan). */
export interface EntitledPlan {
  readonly planName: string | null;
  readonly features: Features;
}

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

/**
 * Reads the context's entitled plan through `em` (in its transaction, when it has one: the entitlements
 * service for its cache, and the subscription events to tell whether a change altered entitlements).
 */
export async function loadEntitledPlan(em: EntityManager, context: BillingContext): Promise<EntitledPlan> {
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
  return plan ? { planName: plan.name, features: plan.features } : { planName: null, features: {} };
}
