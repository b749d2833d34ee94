import type { Opt } from '@mikro-orm/core';
import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

export type AuditActorType = 'operator' | 'api_key' | 'admin_token';

/** A field's value before and after a write (`null` before on a create, `null` after on a delete). */
export type AuditChanges = Record<string, { readonly before: unknown; readonly after: unknown }>;

/**
 * One write by an operator, an API key or the admin token, appended in the write's own transaction.
 * Plain columns, no foreign keys: the record outlives what it names. `customerId` is the subject whose
 * erasure scrubs the row's personal values (the fact of the action stays).
 */
@Entity({ tableName: 'audit_event' })
@Index({ properties: ['at', 'id'] })
@Index({ properties: ['appId', 'at'] })
@Index({ properties: ['actorId', 'at'] })
@Index({ properties: ['targetId'] })
@Index({ properties: ['customerId'] })
export class AuditEvent {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  at: Opt<Date> = new Date();

  /** `<resource>.<verb>`, e.g. `customer.update`. */
  @Property({ type: 'text' })
  action!: string;

  @Property({ type: 'text', nullable: true })
  targetId: string | null = null;

  /** None for writes outside any app (operators, for one). */
  @Property({ type: 'text', nullable: true })
  appId: string | null = null;

  @Property({ type: 'text' })
  actorType!: AuditActorType;

  /** The operator's or API key's id; null for the admin token. */
  @Property({ type: 'text', nullable: true })
  actorId: string | null = null;

  @Property({ type: 'text', nullable: true })
  actorEmail: string | null = null;

  @Property({ type: 'text', nullable: true })
  ip: string | null = null;

  @Property({ type: 'text', nullable: true })
  userAgent: string | null = null;

  @Property({ type: 'jsonb', nullable: true })
  changes: AuditChanges | null = null;

  /** The customer the write concerns, if any: its erasure scrubs `changes`. */
  @Property({ type: 'text', nullable: true })
  customerId: string | null = null;
}
