import type { EntityManager } from '@mikro-orm/postgresql';
import type { BillingContext } from '../subscriptions/billing-context.js';
import { entitledPlanIdSql } from '../subscriptions/entitled-plan.js';

/**
 * The entitlement version (`ev`) of a context: the latest change, in milliseconds since the epoch, of
 * anything its entitlements are derived from — any of its subscriptions, the plans they name, and the
 * app's default plan. A subscription change and a plan edit each move it forward, so a token or event
 * carrying a larger `ev` describes newer entitlements. 0 when there is nothing at all.
 */
function versionSql(owner: 'customer' | 'organization'): string {
  const whose =
    owner === 'customer' ? 's.customer_id = ? and s.organization_id is null' : 's.organization_id = ?';
  return `
  with subs as (select s.plan_id, s.updated_at from subscription s where s.app_id = ? and ${whose})
  select coalesce((extract(epoch from greatest(
           (select max(updated_at) from subs),
           (select max(p.updated_at) from plan p
             where p.app_id = ? and (p.is_default or p.id in (select plan_id from subs)))
         )) * 1000)::bigint, 0)::text as ev,
         (select e.slug from plan e where e.id = ${entitledPlanIdSql(owner, {
           appId: '?',
           ownerId: '?',
           overrideId: "''",
           overrideStatus: "''",
           overridePlanId: "''",
         })}) as plan_id`;
}

const VERSION_OF_CUSTOMER = versionSql('customer');
const VERSION_OF_ORGANIZATION = versionSql('organization');

/** A context's entitlement version and the id (slug) of its entitled plan, if any. */
export interface EntitlementsVersion {
  readonly version: number;
  readonly planId: string | null;
}

export async function loadEntitlementsVersion(
  em: EntityManager,
  context: BillingContext,
): Promise<EntitlementsVersion> {
  const [sql, id] =
    context.organizationId !== undefined
      ? [VERSION_OF_ORGANIZATION, context.organizationId]
      : [VERSION_OF_CUSTOMER, context.customerId];
  const rows = await em
    .getConnection()
    .execute<{ ev: string; plan_id: string | null }[]>(
      sql,
      [context.appId, id, context.appId, context.appId, id, context.appId],
      'all',
      em.getTransactionContext(),
    );
  return { version: Number(rows[0]?.ev ?? 0), planId: rows[0]?.plan_id ?? null };
}

/** The response header that carries a context's entitlement version beside the interface's bodies. */
export const ENTITLEMENTS_VERSION_HEADER = 'Tollgate-Entitlements-Version';
