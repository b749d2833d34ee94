import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';

/**
 * The outbox: one row per event, written in the transaction of the change that caused it. Its id is the
 * `webhook-id` every delivery and retry of the event carries, and its body is frozen as it was then.
 */
@Entity({ tableName: 'webhook_event' })
@Index({ properties: ['app', 'createdAt'] })
@Index({ properties: ['createdAt'] })
// A customer's erasure: one app's events concerning a customer or organization id.
@Index({
  name: 'webhook_event_app_id_subject_ids_index',
  expression:
    'create index "webhook_event_app_id_subject_ids_index" on "webhook_event" using gin ("app_id", "subject_ids" jsonb_path_ops)',
})
export class WebhookEvent {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  type!: string;

  /** The JSON body `{ type, timestamp, data }`, kept as text: every attempt sends (and signs) the same bytes. */
  @Property({ type: 'text' })
  body!: string;

  /**
   * The ids of the customers and organizations the event concerns, recorded when it is written (the
   * customer of a `customer.*` event, the owner of a subscription's or entitlements' event; none for a
   * plan's). A customer's erasure deletes the events naming its id here, and only those.
   */
  @Property({ type: 'jsonb', defaultRaw: "'[]'" })
  subjectIds: Opt<string[]> = [];

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event on its way to one endpoint: pending while attempts remain, then succeeded or failed. */
@Entity({ tableName: 'webhook_delivery' })
@Index({ properties: ['endpoint', 'createdAt'] })
@Index({ properties: ['event'] })
@Index({ properties: ['status', 'nextAttemptAt'] })
export class WebhookDelivery {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => WebhookEvent, { deleteRule: 'cascade' })
  event!: WebhookEvent;

  @ManyToOne(() => WebhookEndpoint, { deleteRule: 'cascade' })
  endpoint!: WebhookEndpoint;

  @Property({ type: 'text', defaultRaw: "'pending'" })
  status: Opt<DeliveryStatus> = 'pending';

  /** Attempts made so far; a job names the attempt it makes, so a stale or duplicate job does nothing. */
  @Property({ type: 'integer', defaultRaw: '0' })
  attempts: Opt<number> = 0;

  @Property({ type: 'datetime', nullable: true })
  nextAttemptAt: Date | null = null;

  /**
   * Until when an instance is making an attempt (claimed in the statement that loads the delivery): a
   * second job for the same attempt finds it claimed and sends nothing. A claim of a process that died
   * lapses, and the attempt is made again (delivery is at least once).
   */
  @Property({ type: 'datetime', nullable: true })
  claimedUntil: Date | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  updatedAt: Opt<Date> = new Date();
}

/** What one attempt got: the status (null without an answer), how long it took, and a short excerpt. */
@Entity({ tableName: 'webhook_attempt' })
@Index({ properties: ['delivery', 'attemptedAt'] })
export class WebhookAttempt {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => WebhookDelivery, { deleteRule: 'cascade' })
  delivery!: WebhookDelivery;

  @Property({ type: 'datetime' })
  attemptedAt!: Date;

  @Property({ type: 'integer', nullable: true })
  statusCode: number | null = null;

  @Property({ type: 'integer' })
  durationMs!: number;

  /** The first characters of the answer, or why there was none (timeout, refused address…). */
  @Property({ type: 'text' })
  excerpt!: string;

  /** The headers of the attempt's request (signature included, never a secret); null when none was made. */
  @Property({ type: 'jsonb', nullable: true })
  requestHeaders: Record<string, string> | null = null;
}
