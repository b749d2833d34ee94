import type { Opt } from '@mikro-orm/core';
import {
  Entity,
  Index,
  ManyToOne,
  PrimaryKey,
  Property,
  Trigger,
  Unique,
} from '@mikro-orm/decorators/legacy';
import type { OrgRole } from '../../core/principal.js';
import { MEMBER_CHANGES_TRIGGER } from '../../infra/change-triggers.js';
import { App } from '../apps/app.entity.js';
import { Customer, type Metadata } from '../customers/customer.entity.js';

/** A B2B organization of an app; its members share the organization's subscription. */
@Entity({ tableName: 'organization' })
@Index({ properties: ['app', 'createdAt'] })
export class Organization {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'jsonb', defaultRaw: "'{}'" })
  metadata: Opt<Metadata> = {};

  /** Indexed: a Stripe notification about a subscription made outside Tollgate finds its owner by it. */
  @Index()
  @Property({ type: 'text', nullable: true })
  paymentCustomerId: string | null = null;

  /** Counts membership changes (made under the row's lock), so per-seat quantity jobs know their order. */
  @Property({ type: 'integer', default: 0 })
  seatVersion: Opt<number> = 0;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}

/** A customer's role in an organization. */
@Entity({ tableName: 'organization_member' })
@Unique({ properties: ['organization', 'customer'] })
// Removing a member or changing a role reaches every instance's credential cache when it commits.
@Trigger(MEMBER_CHANGES_TRIGGER)
export class OrganizationMember {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => Organization, { deleteRule: 'cascade' })
  organization!: Organization;

  @ManyToOne(() => Customer, { deleteRule: 'cascade' })
  @Index()
  customer!: Customer;

  @Property({ type: 'text' })
  role!: OrgRole;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();
}
