import type { EntityManager } from '@mikro-orm/postgresql';
import { ForbiddenError, NotFoundError } from '../../core/errors.js';
import { type AppScope, type Principal, scopeToApp } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';

/**
 * Organizations (B2B) are an app setting: every use of them — managing them, buying for one, asking about
 * one's subscription — is refused the same way when the app has not enabled them.
 */
export function assertOrganizationsEnabled(app: { readonly organizationsEnabled: boolean } | null): void {
  if (!app?.organizationsEnabled) throw new ForbiddenError('Organizations are not enabled for this app');
}

/**
 * The principal an operation that lets its caller name the app runs as (see `scopeToApp`): with a
 * scope, the operator acts on the app it names, which must exist (else 404), and an app's credential on
 * its own app; without one (a /v1 route), the caller as it is. An app's credential costs no query.
 */
export async function actingOnApp(
  em: EntityManager,
  principal: Principal,
  scope: AppScope | undefined,
): Promise<Principal> {
  if (scope === undefined) return principal;
  const named =
    scope.appId === undefined || scope.appId === null ? undefined : parseInput(idSchema, scope.appId);
  const acting = scopeToApp(principal, named);
  if (principal.kind === 'admin' && named !== undefined) {
    const rows = await em.getConnection().execute('select 1 from app where id = ?', [named]);
    if (rows.length === 0) throw new NotFoundError('App', named);
  }
  return acting;
}
