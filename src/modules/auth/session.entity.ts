import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Trigger } from '@mikro-orm/decorators/legacy';
import { SESSION_CHANGES_TRIGGER } from '../../infra/change-triggers.js';
import { App } from '../apps/app.entity.js';
import { Customer } from '../customers/customer.entity.js';
import { Organization } from '../organizations/organization.entity.js';

/** A customer session. The token (`tg_st_…`) is given out once; only its SHA-256 is stored. */
@Entity({ tableName: 'session' })
// A revoked or deleted session leaves every instance's credential cache when the change commits.
@Trigger(SESSION_CHANGES_TRIGGER)
export class Session {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @ManyToOne(() => Customer, { deleteRule: 'cascade' })
  @Index()
  customer!: Customer;

  /** Set on sessions made by switching to an organization context. */
  @ManyToOne(() => Organization, { deleteRule: 'cascade', nullable: true })
  organization: Organization | null = null;

  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;
}
