import { BigIntType, type Opt } from '@mikro-orm/core';
import {
  Entity,
  Index,
  ManyToOne,
  PrimaryKey,
  Property,
  Trigger,
  Unique,
} from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';
import { BALANCE_TRIGGERS } from './balance-notices.js';

/** What a bucket holds: a period's plan allowance, the allowance rolled over from the period before, or a grant. */
export type BucketKind = 'allowance' | 'rollover' | 'grant';

/**
 * Units of one metered feature a subject (a customer, or an organization) may consume. Balances are
 * these rows, exactly: a consumption locks the subject's buckets and moves `spent` in one transaction.
 *
 * The subject's ids are plain columns, not foreign keys, so a customer's erasure removes its rows by id
 * (src/modules/metering/metering-eraser.ts) and an organization's rows outlive none of its members' data.
 */
@Entity({ tableName: 'credit_bucket' })
// One allowance and one rollover per subject, feature and period (the period's end is its key); this
// index also serves every lookup of a subject's buckets.
@Unique({ properties: ['subjectId', 'feature', 'kind', 'periodEnd'] })
@Index({ properties: ['customerId'] })
@Index({ properties: ['organizationId'] })
// Grants, voids and deletions reach every instance's balance cache when they commit.
@Trigger(BALANCE_TRIGGERS.insert)
@Trigger(BALANCE_TRIGGERS.delete)
@Trigger(BALANCE_TRIGGERS.update)
export class CreditBucket {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  /** Whose balance: the customer's or the organization's id. */
  @Property({ type: 'text' })
  subjectId!: string;

  @Property({ type: 'text', nullable: true })
  customerId: string | null = null;

  @Property({ type: 'text', nullable: true })
  organizationId: string | null = null;

  @Property({ type: 'text' })
  feature!: string;

  @Property({ type: 'text' })
  kind!: BucketKind;

  /** A grant's or a rollover's size; null for an allowance, whose size is the plan's current limit. */
  @Property({ type: new BigIntType('number'), nullable: true })
  amount: number | null = null;

  /** What this bucket has paid for (refunds give it back while the bucket is active). */
  @Property({ type: new BigIntType('number'), default: 0 })
  spent: Opt<number> = 0;

  /** On a period's allowance: everything consumed in the period, whichever bucket paid. */
  @Property({ type: new BigIntType('number'), default: 0 })
  used: Opt<number> = 0;

  /** An allowance's units consumed past the balance this period (a feature with overage), refunds deducted. */
  @Property({ type: new BigIntType('number'), default: 0 })
  overage: Opt<number> = 0;

  /** Burn-down priority: lower first (0–100). */
  @Property({ type: 'integer', default: 50 })
  priority: Opt<number> = 50;

  /** The end of the period an allowance or rollover belongs to; null for a grant. */
  @Property({ type: 'datetime', nullable: true })
  periodEnd: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  expiresAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  voidedAt: Date | null = null;

  /** Creation time, one of the burn-down keys (an allowance: its period's start). */
  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();
}
