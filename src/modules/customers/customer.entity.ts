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
import { COUNT_TRIGGERS } from './customer-count.js';
import { ROWS_TRIGGERS } from './customer-rows-notice.js';

export type Metadata = Record<string, unknown>;

/** An end user of an app. E-mail is unique per app regardless of case (enforced on `emailLower`). */
@Entity({ tableName: 'customer' })
@Unique({ properties: ['app', 'emailLower'] })
// The list order (newest first, id breaking ties) with the e-mail alongside: a page, a deep offset and
// a fragment filter walking the newest rows are all index-only scans of one app's entries.
@Index({
  name: 'customer_app_id_created_at_id_index',
  expression:
    'create index "customer_app_id_created_at_id_index" on "customer" ("app_id", "created_at", "id") include ("email_lower")',
})
// A changed or deleted customer leaves every instance's session cache when the change commits.
@Trigger(CUSTOMER_CHANGES_TRIGGER)
// Substring search on e-mail (`LIKE '%frag%'` on the lower-cased copy) through trigrams. The app is a
// key of the same GIN index (btree_gin), so a fragment's candidates are the app's alone before any row
// is read, whatever the other apps hold.
@Index({
  name: 'customer_app_id_email_lower_trgm_index',
  expression:
    'create index "customer_app_id_email_lower_trgm_index" on "customer" using gin ("app_id", "email_lower" gin_trgm_ops)',
})
// The per-app count behind `pagination.total` (customer-count.entity.ts), kept by the database for every
// kind of write: one statement-level trigger per event, reading the statement's transition table (and a
// TRUNCATE trigger, created by the migration alone: schema introspection does not list those).
@Trigger(COUNT_TRIGGERS.insert)
@Trigger(COUNT_TRIGGERS.delete)
@Trigger(COUNT_TRIGGERS.update)
// The rows each statement adds or removes, announced with the counter's version so that instances adjust
// what they remember of the app's lists (customer-list-cache.ts) instead of counting again.
@Trigger(ROWS_TRIGGERS.insert)
@Trigger(ROWS_TRIGGERS.delete)
@Trigger(ROWS_TRIGGERS.update)
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

  /** Indexed: a Stripe notification about a subscription made outside Tollgate finds its owner by it. */
  @Index()
  @Property({ type: 'text', nullable: true })
  paymentCustomerId: string | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  updatedAt: Opt<Date> = new Date();
}
