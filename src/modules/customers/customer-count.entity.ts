import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';

/**
 * How many customers an app has, kept by statement triggers on `customer` (see customer-count.ts), so
 * `pagination.total` of an unfiltered list is a sum of a few rows instead of a count of the app's rows.
 * The database keeps it, not our code: rows an operator inserts, deletes, copies or truncates with plain
 * SQL are counted too, in the same transaction as the change.
 *
 * An app's count is spread over shard rows, one per writing database session (claimed by the session,
 * see migration Migration20261125120000), so concurrent inserts into one app do not queue on a single
 * row; the app's total is the sum of its shards, and a shard alone may be negative (deleted elsewhere
 * than inserted).
 *
 * `version` is the app's write version, also a sum over its shards: the same upserts add 1 for every
 * statement that changes which customers the app has or their list key or e-mail (see migration
 * Migration20261125110500). It never decreases, so two snapshots reading the same sum see the same
 * customers, and a count or list position remembered with it is exact while it lasts.
 */
@Entity({ tableName: 'customer_count' })
export class CustomerCount {
  @ManyToOne(() => App, { primary: true, deleteRule: 'cascade' })
  app!: App;

  @PrimaryKey({ type: 'smallint' })
  shard!: number;

  @Property({ type: 'bigint' })
  n!: string;

  @Property({ type: 'bigint', default: '0' })
  version!: string;
}
