import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import type { OrgRole } from '../../core/principal.js';
import { App } from '../apps/app.entity.js';
import { Customer } from '../customers/customer.entity.js';
import { Organization } from './organization.entity.js';

/** What became of an invitation; a pending one past `expiresAt` reads as `expired`. */
export type InvitationState = 'pending' | 'accepted' | 'revoked';

/**
 * An e-mailed invitation into an organization. While pending and unexpired it holds a seat. Only the
 * SHA-256 of its single-use token is stored. `customer` is its subject: the invitee once known (at the
 * invitation when the address is a customer's already, else when accepted), so a customer's erasure
 * takes the row with it.
 */
@Entity({ tableName: 'organization_invitation' })
@Index({ properties: ['organization', 'createdAt'] })
@Index({ properties: ['app', 'emailLower'] })
export class OrganizationInvitation {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @ManyToOne(() => Organization, { deleteRule: 'cascade' })
  organization!: Organization;

  @ManyToOne(() => Customer, { deleteRule: 'cascade', nullable: true })
  @Index()
  customer: Customer | null = null;

  @Property({ type: 'text' })
  email!: string;

  @Property({ type: 'text' })
  emailLower!: string;

  @Property({ type: 'text' })
  role!: OrgRole;

  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @Property({ type: 'text' })
  redirectUrl!: string;

  @Property({ type: 'text', default: 'pending' })
  state: Opt<InvitationState> = 'pending';

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime', nullable: true })
  acceptedAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;
}
