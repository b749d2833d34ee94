import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';

/**
 * How many customers an app has, kept by statement triggers on `customer` (see customer-count.ts), so
 * `pagination.total` of an unfiltered list is a sum of a few rows instead of a count of the app's rows.
 * The database keeps it, not our code: rows an operator inserts, deletes, copies or truncates with plain
 * SQL are counted too, in the same transaction as the change.
 *
 * An app's count is spread over shard rows (the writing backend picks one), so concurrent inserts into
 * one app do not queue on a single row; the app's total is the sum of its shards, and a shard alone
 * may be negative (deleted elsewhere than inserted).
 */
@Entity({ tableName: 'customer_count' })
export class CustomerCount {
  @ManyToOne(() => App, { primary: true, deleteRule: 'cascade' })
  app!: App;

  @PrimaryKey({ type: 'smallint' })
  shard!: number;

  @Property({ type: 'bigint' })
  n!: string;
}
