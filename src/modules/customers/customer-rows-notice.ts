import { customerStatementTriggers } from './customer-count.js';

/**
 * The channel on which the database announces, per statement and app, the customers a statement added
 * to or removed from the app's list (see migration Migration20261126170000). Kept apart from the change
 * feed's main channel: these notices feed the remembered lists only, and no other cache need hear of
 * every customer insert.
 */
export const CUSTOMER_ROWS_CHANNEL = 'tollgate_customer_rows';

/** A row as a notice carries it: id, created_at in microseconds since the epoch, email_lower. */
export type NoticeRow = readonly [id: string, at: number, emailLower: string];

/**
 * What one statement did to one app's list: the counter shard it wrote and that shard's version after
 * it (see customer-count.entity.ts), and the rows it added (`ins`) and removed (`del`); an update that
 * changes a row's list key or e-mail removes the old row and adds the new one. Without `ins` and `del`
 * (a statement of more rows than a notice holds) only the version is known.
 */
export interface CustomerRowsNotice {
  readonly app: string;
  readonly shard: number;
  readonly v: number;
  readonly ins?: readonly NoticeRow[];
  readonly del?: readonly NoticeRow[];
}

/**
 * Statement-level triggers that send the notices. Named so that they fire after the count triggers of
 * the same event (PostgreSQL fires a table's triggers of one timing in name order), so the version they
 * read is the one the count trigger has just written.
 */
export const ROWS_TRIGGERS = customerStatementTriggers('customer_list_rows');
