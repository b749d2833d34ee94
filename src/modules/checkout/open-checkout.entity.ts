import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';
import { Customer } from '../customers/customer.entity.js';
import { Organization } from '../organizations/organization.entity.js';

/**
 * A checkout session Tollgate started and that may still be paid. Kept so that, once one checkout of a
 * buyer completes, the buyer's other open sessions are expired at the provider and cannot be paid too.
 * Exactly one of customer, organization and e-mail (a buyer who is not a customer yet) is set.
 */
@Entity({ tableName: 'open_checkout' })
@Index({ properties: ['app', 'customer'] })
@Index({ properties: ['app', 'organization'] })
@Index({ properties: ['app', 'emailLower'] })
@Index({ properties: ['app', 'expiresAt'] })
export class OpenCheckout {
  /** The provider's checkout session id. */
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @ManyToOne(() => Customer, { deleteRule: 'cascade', nullable: true })
  customer: Customer | null = null;

  @ManyToOne(() => Organization, { deleteRule: 'cascade', nullable: true })
  organization: Organization | null = null;

  @Property({ type: 'text', nullable: true })
  emailLower: string | null = null;

  /** When the provider expires the session by itself; later rows are only cleared away. */
  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Date = new Date();
}
