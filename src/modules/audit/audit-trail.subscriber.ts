import {
  ChangeSetType,
  type EntityMetadata,
  type EventSubscriber,
  type FlushEventArgs,
} from '@mikro-orm/core';
import { currentAuditRequest } from '../../core/audit-context.js';
import { newId } from '../../core/ids.js';
import { type AuditChanges, AuditEvent } from './audit-event.entity.js';

/** Stored in place of a secret's value, so a rotation shows without the secret. */
export const REDACTED = '[redacted]';

interface Audited {
  /** The action's resource, e.g. `customer` in `customer.update`. */
  readonly resource: string;
  /** Fields whose values are secrets: recorded as changed, never with their value. */
  readonly secret?: readonly string[];
  /** Fields not worth a line (kept in step by the code, or bookkeeping). */
  readonly ignored?: readonly string[];
  /** Whether this change is audited at all (a consumption moving a bucket's `spent` is not). */
  readonly audits?: (type: ChangeSetType, entity: any, payload: Record<string, unknown>) => boolean;
  /** The verb of an update that means more than "update" (a revocation). */
  readonly updateVerb?: (payload: Record<string, unknown>) => string | undefined;
  readonly appId: (entity: any) => string | null;
  /** The id the API knows the target by, when it is not the row's key (a plan's slug). */
  readonly target?: (entity: any) => string;
  readonly customerId?: (entity: any) => string | null;
}

const idOf = (value: unknown): string | null => {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && 'id' in value) return String((value as { id: unknown }).id);
  return null;
};

const ofApp = (entity: { app?: unknown }) => idOf(entity.app);
/** Said by the event itself (its target) or kept in step by the code. */
const BOOKKEEPING = ['id', 'createdAt', 'updatedAt'];

/**
 * Every audited entity, by class name. What is not here (usage, refunds, deliveries) is its own ledger;
 * credit grants are written by the ledger's own SQL and audited there (audit-record.ts).
 */
const AUDITED: Readonly<Record<string, Audited>> = {
  App: { resource: 'app', appId: (app) => app.id },
  ApiKey: {
    resource: 'api_key',
    secret: ['keyHash'],
    ignored: ['lastUsedAt'],
    updateVerb: (payload) => (payload.revokedAt ? 'revoke' : undefined),
    appId: ofApp,
  },
  Plan: { resource: 'plan', appId: ofApp, target: (plan) => plan.slug },
  Customer: {
    resource: 'customer',
    ignored: ['emailLower'],
    appId: ofApp,
    customerId: (customer) => customer.id,
  },
  Subscription: { resource: 'subscription', appId: ofApp, customerId: (s) => idOf(s.customer) },
  Organization: { resource: 'organization', ignored: ['seatVersion'], appId: ofApp },
  OrganizationMember: {
    resource: 'organization_member',
    appId: (member) => idOf(member.organization?.app),
    customerId: (member) => idOf(member.customer),
  },
  WebhookEndpoint: {
    resource: 'webhook_endpoint',
    secret: ['secretCiphertext', 'previousSecretCiphertext'],
    appId: ofApp,
  },
  Operator: { resource: 'operator', ignored: ['emailLower'], appId: () => null },
  OperatorSession: {
    resource: 'operator_session',
    audits: (type, _session, payload) => type === ChangeSetType.UPDATE && Boolean(payload.revokedAt),
    updateVerb: () => 'revoke',
    ignored: ['lastSeenAt'],
    appId: () => null,
  },
};

/** JSON-safe: dates as ISO text, references as their id. */
function plain(value: unknown): unknown {
  if (value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'id' in value)
    return idOf(value);
  return value;
}

/** The unit of work keeps JSON columns serialized in its snapshots: read back as values. */
function recorded(meta: EntityMetadata, field: string, value: unknown): unknown {
  const property = meta.properties[field as keyof typeof meta.properties] as
    | { type?: unknown; columnTypes?: string[] }
    | undefined;
  const json =
    property?.columnTypes?.some((t) => t.startsWith('json')) || /json/i.test(String(property?.type ?? ''));
  if (json && typeof value === 'string') {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return plain(value);
}

function changesOf(
  type: ChangeSetType,
  audited: Audited,
  meta: EntityMetadata,
  payload: Record<string, unknown>,
  original: Record<string, unknown> | undefined,
  entity: Record<string, unknown>,
): AuditChanges {
  const skip = new Set([...BOOKKEEPING, ...(audited.ignored ?? [])]);
  const secret = new Set(audited.secret ?? []);
  const deleting = type === ChangeSetType.DELETE || type === ChangeSetType.DELETE_EARLY;
  // A delete's change set may carry no snapshot: the row's last values are then the entity's own.
  const last = deleting && (!original || Object.keys(original).length === 0) ? entity : original;
  const fields = deleting
    ? meta.props
        .filter((p) => p.persist !== false && p.kind !== 'm:n' && p.kind !== '1:m')
        .map((p) => p.name as string)
    : Object.keys(payload);
  const changes: AuditChanges = {};
  for (const field of fields) {
    if (skip.has(field)) continue;
    const created = type === ChangeSetType.CREATE;
    const before = created ? null : recorded(meta, field, last?.[field]);
    const after = deleting ? null : recorded(meta, field, payload[field]);
    changes[field] = secret.has(field)
      ? { before: before === null ? null : REDACTED, after: after === null ? null : REDACTED }
      : { before, after };
  }
  return changes;
}

/**
 * The audit log, written by the unit of work itself: every flush made on behalf of an operator, an API
 * key or the admin token (src/core/audit-context.ts) appends one event per audited row it creates,
 * changes or deletes, in the flush's own transaction. Written here once rather than in each service, so
 * a new write path of an audited entity cannot forget it; secrets are named as changed, never stored.
 */
export class AuditTrail implements EventSubscriber {
  onFlush(args: FlushEventArgs): void {
    const request = currentAuditRequest();
    if (!request) return;
    const events: AuditEvent[] = [];
    for (const changeSet of args.uow.getChangeSets()) {
      const audited = AUDITED[changeSet.meta.className];
      if (!audited) continue;
      const type = changeSet.type;
      const payload = (changeSet.payload ?? {}) as Record<string, unknown>;
      if (audited.audits && !audited.audits(type, changeSet.entity, payload)) continue;
      const changes = changesOf(
        type,
        audited,
        changeSet.meta as EntityMetadata,
        payload,
        changeSet.originalEntity as Record<string, unknown> | undefined,
        changeSet.entity as Record<string, unknown>,
      );
      let verb: string;
      if (type === ChangeSetType.CREATE) verb = 'create';
      else if (type === ChangeSetType.DELETE || type === ChangeSetType.DELETE_EARLY) verb = 'delete';
      else {
        if (Object.keys(changes).length === 0) continue;
        verb = audited.updateVerb?.(payload) ?? 'update';
      }
      const entity = changeSet.entity as Record<string, unknown>;
      events.push(
        args.em.create(AuditEvent, {
          id: newId('aud'),
          at: new Date(),
          action: `${audited.resource}.${verb}`,
          targetId: audited.target?.(entity) ?? idOf(changeSet.getPrimaryKey()) ?? idOf(entity.id),
          appId: audited.appId(entity),
          actorType: request.actor.type,
          actorId: request.actor.id,
          actorEmail: request.actor.email,
          ip: request.ip,
          userAgent: request.userAgent,
          changes,
          customerId: audited.customerId?.(entity) ?? null,
        }),
      );
    }
    for (const event of events) args.uow.computeChangeSet(event);
  }
}
