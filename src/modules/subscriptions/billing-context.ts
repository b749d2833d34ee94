import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { type Principal, requireAppPrincipal } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import { type ChangeFeed, customerChangeTags, customerTag, FeedCache } from '../../infra/change-feed.js';
import { inTransaction } from '../../infra/unit-of-work.js';
import { assertOrganizationsEnabled } from '../apps/app-rules.js';

/** Whose subscription or entitlements an API key asks for: exactly one of `customerId`, `organizationId`. */
export const billingContextQuerySchema = z
  .strictObject({ customerId: idSchema.optional(), organizationId: idSchema.optional() })
  .refine((q) => (q.customerId === undefined) !== (q.organizationId === undefined), {
    message: 'exactly one of customerId or organizationId is required',
  });

/** Whose subscription and entitlements: a customer's own, or an organization's (shared by its members). */
export type BillingContext =
  | { readonly appId: string; readonly customerId: string; readonly organizationId?: undefined }
  | { readonly appId: string; readonly organizationId: string; readonly customerId?: undefined };

/**
 * Customers known to exist in their app, so an API-key check about a customer needs no query to know
 * the customer is the app's. Only found customers are kept; a customer's deletion (or any change of its
 * row) drops it on every instance when it commits.
 */
export function knownCustomers(changes: ChangeFeed): FeedCache<boolean> {
  return new FeedCache(changes, customerChangeTags);
}

/**
 * The context a request asks about, one rule for `/v1/entitlements…` and `/v1/subscriptions/current`:
 * a session token uses its own (the organization once switched); an API key names exactly one
 * customer or organization of its own app (another app's → 404; organizations disabled → 403).
 */
export async function billingContextOf(
  orm: MikroORM,
  principal: Principal,
  query: unknown,
  customers?: FeedCache<boolean>,
  synced?: boolean,
): Promise<BillingContext> {
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
  const { customerId, organizationId } = parseInput(billingContextQuerySchema, query ?? {});
  const connection = orm.em.getConnection();
  if (customerId !== undefined) {
    const exists = async () =>
      (
        await connection.execute('select 1 from customer where id = ? and app_id = ?', [
          customerId,
          caller.appId,
        ])
      ).length > 0;
    // Inside a transaction the caller may see its own uncommitted customer: never cache that.
    const found =
      customers && !inTransaction(orm.em)
        ? await customers.get(
            `${caller.appId}|${customerId}`,
            exists,
            () => [customerTag(customerId)],
            (f) => f,
            synced,
          )
        : await exists();
    if (!found) throw new NotFoundError('Customer', customerId);
    return { appId: caller.appId, customerId };
  }
  const [row] = await connection.execute<{ enabled: boolean; found: boolean }[]>(
    `select a.organizations_enabled as enabled, exists (select 1 from organization o
        where o.id = ? and o.app_id = a.id) as found
       from app a where a.id = ?`,
    [organizationId, caller.appId],
  );
  assertOrganizationsEnabled(row ? { organizationsEnabled: row.enabled } : null);
  if (!row?.found) throw new NotFoundError('Organization', organizationId);
  return { appId: caller.appId, organizationId: organizationId! };
}
