import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';

/**
 * The first answer to a request sent with an `Idempotency-Key`, per credential and key, kept for 24 hours
 * so that a repeat is answered from here instead of running again. Inserted before the request runs
 * (`ownerToken` set, no answer yet): the primary key is what makes a concurrent repeat, on any instance,
 * wait or be refused instead of running too. The owner renews `lockedUntil` while it runs, so a record
 * whose request died with its process is taken over once that lease has passed.
 */
@Entity({ tableName: 'idempotency_record' })
@Index({ properties: ['expiresAt'] })
@Index({ properties: ['app'] })
// The erasure's lookup: one app's records naming a customer id.
@Index({
  name: 'idempotency_record_app_id_customer_ids_index',
  expression:
    'create index "idempotency_record_app_id_customer_ids_index" on "idempotency_record" using gin ("app_id", "customer_ids" jsonb_path_ops)',
})
export class IdempotencyRecord {
  /** The API key's or session's id (never the token itself). */
  @PrimaryKey({ type: 'text' })
  credentialId!: string;

  @PrimaryKey({ type: 'text' })
  key!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  /** SHA-256 of the method, path and canonical body: the same key with another request is refused. */
  @Property({ type: 'text' })
  fingerprint!: string;

  /** Random id of the run that holds the record; null once its answer is stored. */
  @Property({ type: 'text', nullable: true })
  ownerToken: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  lockedUntil: Date | null = null;

  @Property({ type: 'integer', nullable: true })
  responseStatus: number | null = null;

  @Property({ type: 'text', nullable: true })
  responseContentType: string | null = null;

  @Property({ type: 'text', nullable: true })
  responseBody: string | null = null;

  /**
   * The subjects: every customer id the request touched (noted while it ran, whatever its answer shows)
   * or named. A customer's erasure selects the records to erase by these ids alone.
   */
  @Property({ type: 'jsonb', defaultRaw: "'[]'" })
  customerIds: Opt<string[]> = [];

  /**
   * Set when a customer the record concerned was erased: the record is a tombstone (credential, key and
   * expiry only) and a repeat answers 409 until it expires.
   */
  @Property({ type: 'datetime', nullable: true })
  erasedAt: Date | null = null;

  @Property({ type: 'datetime' })
  createdAt!: Date;

  @Property({ type: 'datetime' })
  expiresAt!: Date;
}
