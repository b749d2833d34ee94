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

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();
}
