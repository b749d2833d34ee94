import { BigIntType, type Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';
import type { MovementKind } from './mrr-rules.js';

/** What made a movement: the path of the change that recorded it. */
export const MOVEMENT_CAUSES = [
  'checkout',
  'notification',
  'plan_change',
  'cancel',
  'pause',
  'resume',
  'reconciliation',
  'backfill',
  'repair',
] as const;
export type MovementCause = (typeof MOVEMENT_CAUSES)[number];

/**
 * One change of a subscription's MRR or of how it counts (trialing, ended), appended in the transaction
 * of the change and never updated. Its subject (the customer or organization whose subscription it is)
 * is recorded by id, so an erasure finds its rows; it holds no personal data, only ids and amounts.
 */
@Entity({ tableName: 'mrr_movement' })
@Index({ properties: ['app', 'occurredAt'] })
@Index({ properties: ['app', 'subjectId', 'currency'] })
@Index({ properties: ['subscriptionId'] })
@Index({ properties: ['customerId'] })
@Index({ properties: ['organizationId'] })
export class MrrMovement {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  subscriptionId!: string;

  /** The customer's or the organization's id: whose MRR moved. */
  @Property({ type: 'text' })
  subjectId!: string;

  @Property({ type: 'text', nullable: true })
  customerId: string | null = null;

  @Property({ type: 'text', nullable: true })
  organizationId: string | null = null;

  /** The plan (its public id) the subscription is on after the change, and before it. */
  @Property({ type: 'text' })
  planId!: string;

  @Property({ type: 'text', nullable: true })
  planBeforeId: string | null = null;

  @Property({ type: 'text' })
  currency!: string;

  /** The subscription's MRR before and after. */
  @Property({ type: new BigIntType('number') })
  mrrBefore!: number;

  @Property({ type: new BigIntType('number') })
  mrrAfter!: number;

  /** The subject's MRR in the currency before and after (what `kind` is judged on). */
  @Property({ type: new BigIntType('number') })
  subjectMrrBefore!: number;

  @Property({ type: new BigIntType('number') })
  subjectMrrAfter!: number;

  /** Null when only how the subscription counts changed (a trial started or ended, a canceled trial). */
  @Property({ type: 'text', nullable: true })
  kind: MovementKind | null = null;

  @Property({ type: 'text' })
  cause!: MovementCause;

  @Property({ type: 'text', nullable: true })
  statusBefore: string | null = null;

  @Property({ type: 'text' })
  statusAfter!: string;

  /** The subscription started counting (paying or trialing) for the first time. */
  @Property({ type: 'boolean', default: false })
  started: Opt<boolean> = false;

  /** The subscription ended (canceled or expired). */
  @Property({ type: 'boolean', default: false })
  ended: Opt<boolean> = false;

  /** The subscription went from trialing to paying. */
  @Property({ type: 'boolean', default: false })
  converted: Opt<boolean> = false;

  /** Written after the fact (an upgrade's back-fill, a repair) rather than with the change. */
  @Property({ type: 'boolean', default: false })
  backfilled: Opt<boolean> = false;

  @Property({ type: 'datetime' })
  occurredAt!: Date;
}

/**
 * The movements of one UTC day, per app, currency and plan, summed in the same transaction as each
 * movement: a range's figures read these few rows instead of every movement. Each is split in up to 16
 * rows by the movement's subject (`shard`), so concurrent movements of different subjects seldom wait
 * for each other's row lock (held until their commit); readers sum the shards.
 */
@Entity({ tableName: 'mrr_daily' })
export class MrrDaily {
  @ManyToOne(() => App, { deleteRule: 'cascade', primary: true })
  app!: App;

  @PrimaryKey({ type: 'text' })
  currency!: string;

  @PrimaryKey({ type: 'date' })
  day!: string;

  @PrimaryKey({ type: 'text' })
  planId!: string;

  /** The subject's shard, written by `tollgate_record_mrr_movement`: `hashtext(subject_id) & 15`. */
  @PrimaryKey({ type: 'smallint', default: 0 })
  shard: Opt<number> = 0;

  /** The change of MRR, of paying and of trialing subscriptions over the day. */
  @Property({ type: new BigIntType('number'), default: 0 })
  mrrDelta: Opt<number> = 0;

  @Property({ type: 'integer', default: 0 })
  activeDelta: Opt<number> = 0;

  @Property({ type: 'integer', default: 0 })
  trialingDelta: Opt<number> = 0;

  @Property({ type: new BigIntType('number'), default: 0 })
  newMrr: Opt<number> = 0;

  @Property({ type: new BigIntType('number'), default: 0 })
  expansionMrr: Opt<number> = 0;

  @Property({ type: new BigIntType('number'), default: 0 })
  contractionMrr: Opt<number> = 0;

  @Property({ type: new BigIntType('number'), default: 0 })
  churnedMrr: Opt<number> = 0;

  @Property({ type: new BigIntType('number'), default: 0 })
  reactivationMrr: Opt<number> = 0;

  @Property({ type: 'integer', default: 0 })
  newSubscriptions: Opt<number> = 0;

  @Property({ type: 'integer', default: 0 })
  canceledSubscriptions: Opt<number> = 0;

  @Property({ type: 'integer', default: 0 })
  trialConversions: Opt<number> = 0;
}
