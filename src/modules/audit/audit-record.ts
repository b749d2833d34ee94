import type { EntityManager } from '@mikro-orm/postgresql';
import { currentAuditRequest } from '../../core/audit-context.js';
import { newId } from '../../core/ids.js';
import { type AuditActorType, type AuditChanges, AuditEvent } from './audit-event.entity.js';

export interface AuditedWrite {
  readonly action: string;
  readonly targetId: string;
  readonly appId: string | null;
  readonly changes: AuditChanges;
  /** The customer the write concerns, whose erasure scrubs the event's values. */
  readonly customerId: string | null;
}

/**
 * Who makes the write being served, as `audit_event` records them, with the event's id; null when no
 * audited actor makes it (background work, a customer's own session).
 */
function auditedBy(): Omit<AuditEventColumns, 'changes'> | null {
  const request = currentAuditRequest();
  if (!request) return null;
  return {
    id: newId('aud'),
    actorType: request.actor.type,
    actorId: request.actor.id,
    actorEmail: request.actor.email,
    ip: request.ip,
    userAgent: request.userAgent,
  };
}

/**
 * Appends the event of a write the unit of work does not see (a row written by SQL of its own, such as
 * the credit ledger's), in the caller's transaction `em`, when an audited actor is making it.
 */
export function appendAuditEvent(em: EntityManager, write: AuditedWrite, at: Date): void {
  const by = auditedBy();
  if (!by) return;
  em.create(AuditEvent, {
    ...by,
    at,
    action: write.action,
    targetId: write.targetId,
    appId: write.appId,
    changes: write.changes,
    customerId: write.customerId,
  });
}

/** What a statement of its own writes into `audit_event` besides the write's action, target and app. */
export interface AuditEventColumns {
  readonly id: string;
  readonly actorType: AuditActorType;
  readonly actorId: string | null;
  readonly actorEmail: string | null;
  readonly ip: string | null;
  readonly userAgent: string | null;
  /** `changes` as JSON text. */
  readonly changes: string;
}

/**
 * The audit event of a write with these `changes`, as columns, when an audited actor is making it (else
 * null), for a hot path whose one statement writes the event with the change itself
 * (src/modules/customers/customer-statements.ts).
 */
export function auditEventColumns(changes: AuditChanges): AuditEventColumns | null {
  const by = auditedBy();
  return by && { ...by, changes: JSON.stringify(changes) };
}
