import { BigIntType, type Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';
import type { Metadata } from '../customers/customer.entity.js';

/** Which bucket paid how much of a consumption: a refund gives each part back to its bucket. */
export interface UsageSource {
  readonly bucket: string;
  readonly amount: number;
}

/**
 * One consumption of a metered feature, recorded in the transaction that took it from the buckets.
 * `customerId` is the customer consuming (a member, in an organization's context); the subject ids are
 * plain columns so a customer's erasure finds its rows by id.
 */
@Entity({ tableName: 'usage_record' })
@Index({ properties: ['subjectId', 'createdAt'] })
@Index({ properties: ['customerId'] })
@Index({ properties: ['organizationId'] })
// The overage not yet reported (or refunded and not yet cancelled): what the report sweep reads.
@Index({
  name: 'usage_record_overage_pending_index',
  expression:
    'create index "usage_record_overage_pending_index" on "usage_record" ("created_at") where overage > 0 and (overage_reported_at is null or (refunded_at is not null and overage_cancelled_at is null))',
})
export class UsageRecord {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  subjectId!: string;

  @Property({ type: 'text', nullable: true })
  customerId: string | null = null;

  @Property({ type: 'text', nullable: true })
  organizationId: string | null = null;

  @Property({ type: 'text' })
  feature!: string;

  @Property({ type: new BigIntType('number') })
  amount!: number;

  /** The period (its end) the consumption counts in. */
  @Property({ type: 'datetime' })
  periodEnd!: Date;

  @Property({ type: 'jsonb' })
  sources!: UsageSource[];

  @Property({ type: 'jsonb', defaultRaw: "'{}'" })
  metadata: Opt<Metadata> = {};

  @Property({ type: 'datetime', nullable: true })
  refundedAt: Date | null = null;

  /** The part of `amount` past the balance, billed at `overagePriceId` (0: none). */
  @Property({ type: new BigIntType('number'), default: 0 })
  overage: Opt<number> = 0;

  /** The feature's overage price when the consumption was recorded; null without overage. */
  @Property({ type: 'text', nullable: true })
  overagePriceId: string | null = null;

  /** When the overage reached the payment provider as a meter event (identifier: this usage's id). */
  @Property({ type: 'datetime', nullable: true })
  overageReportedAt: Date | null = null;

  /** When a refunded overage's meter event was cancelled at the payment provider. */
  @Property({ type: 'datetime', nullable: true })
  overageCancelledAt: Date | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();
}
