import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from './errors.js';

export type OrgRole = 'owner' | 'admin' | 'member';

/** What a named dashboard operator may do: everything and manage operators; everything else; read. */
export type OperatorRole = 'owner' | 'admin' | 'viewer';
export const OPERATOR_ROLES: readonly OperatorRole[] = ['owner', 'admin', 'viewer'];

/** The person behind an operator session (signed in to the dashboard by e-mail). */
export interface OperatorIdentity {
  readonly id: string;
  readonly email: string;
  readonly role: OperatorRole;
  readonly sessionId: string;
}

/** Who is calling. Produced once per request by the credential middleware, used by both transports. */
export type Principal =
  | { readonly kind: 'anonymous' }
  /**
   * The server's own authority: the admin token, or a named operator signed in to the dashboard
   * (`operator`), whose role narrows it (see `requireWrite` and `requireOperatorManager`).
   */
  | { readonly kind: 'admin'; readonly operator?: OperatorIdentity }
  | {
      readonly kind: 'apiKey';
      readonly appId: string;
      readonly apiKeyId: string;
      /**
       * Taken from the instance's cache of keys without waiting for the change feed, for a path that
       * confirms the key in its own statement (see `requireApiKeyConfirmedInStatement`): the key may have
       * been revoked a moment ago. Every other path refuses such a principal. `confirm` resolves the key
       * as every other path does (after the change feed's barrier): the confirmed principal, or 401.
       */
      readonly unconfirmed?: { readonly confirm: () => Promise<ApiKeyPrincipal> };
    }
  | {
      readonly kind: 'session';
      readonly appId: string;
      readonly customerId: string;
      readonly sessionId: string;
      readonly organizationId?: string;
      readonly orgRole?: OrgRole;
    };

export type ApiKeyPrincipal = Extract<Principal, { kind: 'apiKey' }>;
export type SessionPrincipal = Extract<Principal, { kind: 'session' }>;
export type AppPrincipal = ApiKeyPrincipal | SessionPrincipal;

export const ANONYMOUS: Principal = Object.freeze({ kind: 'anonymous' });

/** The operator, for start-up tasks and the CLI (which run with the server's own authority). */
export const ADMIN: Principal = Object.freeze({ kind: 'admin' });

/** No credential → 401; a valid credential of another kind → 403. */
export function requireAdmin(principal: Principal): void {
  if (principal.kind === 'anonymous') throw new UnauthorizedError();
  if (principal.kind !== 'admin') throw new ForbiddenError('This operation needs the admin token');
}

/**
 * A write: a viewer operator only reads, whatever the transport (403). Every other credential keeps the
 * rules of the operation it calls.
 */
export function requireWrite(principal: Principal): void {
  if (principal.kind === 'admin' && principal.operator?.role === 'viewer') {
    throw new ForbiddenError('A viewer can read but not change anything');
  }
}

/** Managing operators: the admin token (the server's own authority) or an owner. */
export function requireOperatorManager(principal: Principal): void {
  requireAdmin(principal);
  if (principal.kind === 'admin' && principal.operator && principal.operator.role !== 'owner') {
    throw new ForbiddenError('Only an owner manages operators');
  }
}

export function requireApiKey(principal: Principal): ApiKeyPrincipal {
  if (principal.kind === 'apiKey') {
    // A bug, not a caller's mistake: the path was marked as confirming its key, and does not.
    if (principal.unconfirmed)
      throw new Error('An unconfirmed API key reached a path that does not confirm it');
    return principal;
  }
  if (principal.kind === 'anonymous') throw new UnauthorizedError();
  throw new ForbiddenError('This operation needs an API key');
}

/** The answer to an API key that is unknown or revoked: the credential check's and a statement's alike. */
export function revokedApiKey(): UnauthorizedError {
  return new UnauthorizedError('Invalid or revoked API key');
}

/**
 * An API key, confirmed or not: for a path whose one statement also checks that the key `apiKeyId` is
 * still unrevoked, and answers 401 when it is not (the change feed's barrier would cost a round trip of
 * its own), or that confirms it (`unconfirmed.confirm`) before answering from memory.
 */
export function requireApiKeyConfirmedInStatement(principal: Principal): ApiKeyPrincipal {
  if (principal.kind === 'apiKey') return principal;
  return requireApiKey(principal);
}

export function requireSession(principal: Principal): SessionPrincipal {
  if (principal.kind === 'session') return principal;
  if (principal.kind === 'anonymous') throw new UnauthorizedError();
  throw new ForbiddenError('This operation needs a customer session token');
}

/** An API key or a customer session of some app. */
export function requireAppPrincipal(principal: Principal): AppPrincipal {
  if (principal.kind === 'apiKey' || principal.kind === 'session') return principal;
  if (principal.kind === 'anonymous') throw new UnauthorizedError();
  throw new ForbiddenError('This operation needs an API key or a customer session token');
}

/**
 * The key id the operator holds while acting on an app it named: no key row has it (key ids are
 * `key_…`), so nothing keyed by a real key (limits, idempotency) ever meets it.
 */
export const OPERATOR_KEY_ID = 'operator';

/**
 * The app an operation is asked to act on, from a transport that lets its caller name one (GraphQL's
 * `appId` argument). An operation called without a scope (the /v1 routes, whose paths name no app) runs
 * as the caller itself, so there the admin token stays a credential of the wrong kind (403).
 */
export interface AppScope {
  readonly appId?: string | null;
}

/**
 * Who an app-level operation runs as when it may name the app (`appId`): the admin token must name it
 * and then acts with the rights of that app's API key, through the same rules; an API key or session
 * may leave it out or name its own app, and naming another app is answered as if it did not exist (404).
 * Whether the named app exists is the caller's to check (see `actingOnApp` in modules/apps/app-rules.ts).
 */
export function scopeToApp(principal: Principal, appId: string | undefined): Principal {
  switch (principal.kind) {
    case 'admin':
      if (appId === undefined) throw ValidationError.forField('appId', 'is required for the admin token');
      return Object.freeze({ kind: 'apiKey', appId, apiKeyId: OPERATOR_KEY_ID });
    case 'apiKey':
    case 'session':
      if (appId !== undefined && appId !== principal.appId) throw new NotFoundError('App', appId);
      return principal;
    case 'anonymous':
      return principal;
  }
}
