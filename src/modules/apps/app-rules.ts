import type { EntityManager } from '@mikro-orm/postgresql';
import { ForbiddenError, NotFoundError } from '../../core/errors.js';
import { type Principal, scopeToApp } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';

/**
 * Organizations (B2B) are an app setting: every use of them — managing them, buying for one, asking about
 * one's subscription — is refused the same way when the app has not enabled them.
 */
export function assertOrganizationsEnabled(app: { readonly organizationsEnabled: boolean } | null): void {
  if (!app?.organizationsEnabled) throw new ForbiddenError('Organizations are not enabled for this app');
}

/**
 * The principal an operation that may name its app (`appId`) runs as (see `scopeToApp`): the operator
 * acts on the app it names, which must exist (else 404); an app's credential on its own app. An app's
 * credential that names nothing costs no query.
 */
export async function actingOnApp(
  em: EntityManager,
  principal: Principal,
  appId: unknown,
): Promise<Principal> {
  const named = appId === undefined || appId === null ? undefined : parseInput(idSchema, appId);
  const acting = scopeToApp(principal, named);
  if (principal.kind === 'admin' && named !== undefined) {
    const rows = await em.getConnection().execute('select 1 from app where id = ?', [named]);
    if (rows.length === 0) throw new NotFoundError('App', named);
  }
  return acting;
}
