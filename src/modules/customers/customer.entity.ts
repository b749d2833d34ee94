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
import { CUSTOMER_CHANGES_TRIGGER } from '../../infra/change-triggers.js';
import { App } from '../apps/app.entity.js';

export type Metadata = Record<string, unknown>;

/** An end user of an app. E-mail is unique per app regardless of case (enforced on `emailLower`). */
@Entity({ tableName: 'customer' })
@Unique({ properties: ['app', 'emailLower'] })
@Index({ properties: ['app', 'createdAt'] })
// Substring search on e-mail (`ILIKE '%frag%'`) stays fast on large tables through a trigram index.
@Index({
  name: 'customer_email_lower_trgm_index',
  expression:
    'create index "customer_email_lower_trgm_index" on "customer" using gin ("email_lower" gin_trgm_ops)',
})
// A changed or deleted customer leaves every instance's session cache when the change commits.
@Trigger(CUSTOMER_CHANGES_TRIGGER)
export class Customer {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  email!: string;

  /** lower(email): the uniqueness key and the column the substring filter searches (trigram index). */
  @Property({ type: 'text' })
  emailLower!: string;

  @Property({ type: 'text', nullable: true })
  name: string | null = null;

  @Property({ type: 'jsonb', defaultRaw: "'{}'" })
  metadata: Opt<Metadata> = {};

  @Property({ type: 'text', nullable: true })
  paymentCustomerId: string | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  updatedAt: Opt<Date> = new Date();
}
