import { BigIntType, type Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Trigger } from '@mikro-orm/decorators/legacy';
import { SUBSCRIPTION_CHANGES_TRIGGER } from '../../infra/change-triggers.js';
import { App } from '../apps/app.entity.js';
import { Customer, type Metadata } from '../customers/customer.entity.js';
import { Organization } from '../organizations/organization.entity.js';
import type { ProviderSubscriptionDiscount, SubscriptionStatus } from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';

/** Statuses that grant the plan's features. */
export const ENTITLING_STATUSES: readonly SubscriptionStatus[] = ['trialing', 'active', 'past_due'];

/** The entitling statuses as an SQL list, for `status in (…)`. */
export const ENTITLING_STATUSES_SQL = ENTITLING_STATUSES.map((s) => `'${s}'`).join(', ');

/** A subscription at Stripe, mirrored from Stripe's notifications and Tollgate's own calls. */
@Entity({ tableName: 'subscription' })
@Index({ properties: ['customer', 'createdAt'] })
@Index({ properties: ['organization', 'createdAt'] })
// Every subscription change reaches every instance's entitlement cache when it commits.
@Trigger(SUBSCRIPTION_CHANGES_TRIGGER)
export class Subscription {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  /**
   * The paying customer, or null for an organization subscription. Deleting the customer keeps the
   * subscription as billing history (Stripe's ids, plan, status, dates) with this link set to null.
   */
  @ManyToOne(() => Customer, { deleteRule: 'set null', nullable: true })
  customer: Customer | null = null;

  @ManyToOne(() => Organization, { deleteRule: 'cascade', nullable: true })
  organization: Organization | null = null;

  @ManyToOne(() => Plan)
  plan!: Plan;

  @Property({ type: 'text', unique: true })
  stripeSubscriptionId!: string;

  @Property({ type: 'text' })
  stripeCustomerId!: string;

  @Property({ type: 'text' })
  status!: SubscriptionStatus;

  @Property({ type: 'datetime', nullable: true })
  currentPeriodEnd: Date | null = null;

  @Property({ type: 'boolean', default: false })
  cancelAtPeriodEnd: Opt<boolean> = false;

  @Property({ type: 'datetime', nullable: true })
  trialEnd: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  canceledAt: Date | null = null;

  @Property({ type: 'jsonb', defaultRaw: "'{}'" })
  metadata: Opt<Metadata> = {};

  /**
   * `created` (Unix seconds) of the newest Stripe event applied; older events are ignored so a late
   * delivery never moves the subscription back to an earlier state.
   */
  @Property({ type: new BigIntType('number'), default: 0 })
  providerEventCreated: Opt<number> = 0;

  /** A per-seat plan's quantity as Tollgate last set it at Stripe (null: never set by Tollgate). */
  @Property({ type: 'integer', nullable: true })
  seatQuantity: number | null = null;

  /**
   * The organization's membership version (`Organization.seatVersion`) that `seatQuantity` follows: a
   * quantity job for an older version finds a later one applied and does nothing.
   */
  @Property({ type: 'integer', default: 0 })
  seatVersion: Opt<number> = 0;

  /**
   * What the subscription was last counted with in the MRR ledger (see modules/analytics): its monthly
   * amount (0 while it does not count), currency, licensed quantity and discounts, so the next change
   * knows its "before".
   */
  @Property({ type: new BigIntType('number'), default: 0 })
  mrrAmount: Opt<number> = 0;

  @Property({ type: 'text', nullable: true })
  mrrCurrency: string | null = null;

  @Property({ type: 'integer', default: 0 })
  mrrQuantity: Opt<number> = 0;

  @Property({ type: 'jsonb', defaultRaw: "'[]'" })
  mrrDiscounts: Opt<ProviderSubscriptionDiscount[]> = [];

  /**
   * Everything of Stripe's state its MRR and its subscription counts depend on, as one string: a
   * notification that leaves it unchanged takes the one-statement path; one that changes it is read,
   * then made with its movement in a second statement. Null before it was first counted.
   */
  @Property({ type: 'text', nullable: true })
  mrrInputs: string | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}
