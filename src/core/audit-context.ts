import { AsyncLocalStorage } from 'node:async_hooks';
import { OPERATOR_KEY_ID, type Principal } from './principal.js';

/** Who made a write, as the audit log names them. */
export type AuditActor =
  | { readonly type: 'operator'; readonly id: string; readonly email: string }
  | { readonly type: 'api_key'; readonly id: string; readonly email: null }
  | { readonly type: 'admin_token'; readonly id: null; readonly email: null };

/** The request a write belongs to, as the audit log records it. */
export interface AuditRequest {
  readonly actor: AuditActor;
  readonly ip: string | null;
  readonly userAgent: string | null;
}

const current = new AsyncLocalStorage<AuditRequest | undefined>();

/**
 * The actor of a credential whose writes are audited: an operator, an API key or the admin token.
 * Customers' own sessions and anonymous calls are not (their writes are the product at work).
 */
export function auditActorOf(principal: Principal): AuditActor | undefined {
  switch (principal.kind) {
    case 'admin':
      return principal.operator
        ? { type: 'operator', id: principal.operator.id, email: principal.operator.email }
        : { type: 'admin_token', id: null, email: null };
    case 'apiKey':
      return principal.apiKeyId === OPERATOR_KEY_ID
        ? { type: 'admin_token', id: null, email: null }
        : { type: 'api_key', id: principal.apiKeyId, email: null };
    case 'session':
    case 'anonymous':
      return undefined;
  }
}

/** Runs `work` with `request` as the author of every audited write it flushes. */
export function withAuditRequest<T>(request: AuditRequest | undefined, work: () => T): T {
  return current.run(request, work);
}

/** The request whose writes are being audited, if any (none for background work and customers). */
export function currentAuditRequest(): AuditRequest | undefined {
  return current.getStore();
}
