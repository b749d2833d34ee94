/**
 * What Tollgate counts as monthly recurring revenue, and how a change of it is classified: pure rules,
 * stated once here and in docs/guides/analytics.md (the `definitions` every analytics answer carries).
 *
 * Stripe Billing's rules: a subscription counts while `active` or `past_due` (a trial, a paused, an
 * unpaid or an ended one does not); each licensed item is normalised to a month (interval counts
 * honoured), multiplied by its quantity and rounded half-up to the currency's smallest unit on its own;
 * metered items, zero prices and tax never count; only a coupon with `duration: forever` reduces it.
 */

export type PriceInterval = 'day' | 'week' | 'month' | 'year';

/** One item of a subscription, as far as MRR is concerned. */
export interface MrrItem {
  readonly unitAmount: number | null;
  readonly currency: string;
  readonly interval: PriceInterval;
  readonly intervalCount: number;
  readonly usageType: 'licensed' | 'metered';
  readonly quantity: number;
}

/** The terms of a coupon applied to a subscription. */
export interface MrrCoupon {
  readonly id: string;
  readonly duration: 'once' | 'repeating' | 'forever';
  readonly percentOff: number | null;
  readonly amountOff: number | null;
  /** The currency of an `amountOff` coupon. */
  readonly currency: string | null;
}

/** Statuses whose subscriptions count towards MRR (Stripe's: `trialing`, `paused`, `unpaid` do not). */
export const COUNTED_STATUSES: readonly string[] = ['active', 'past_due'];

/** How a subscription's status counts in the subscription figures: paying, trialing, ended, or none of these. */
export type StatusClass = 'active' | 'trialing' | 'ended' | 'none';

/** Statuses after which a subscription can never run again. */
export const ENDED_STATUSES: readonly string[] = ['canceled', 'incomplete_expired'];

export function statusClass(status: string | null): StatusClass {
  if (status === null) return 'none';
  if (COUNTED_STATUSES.includes(status)) return 'active';
  if (ENDED_STATUSES.includes(status)) return 'ended';
  return status === 'trialing' ? 'trialing' : 'none';
}

/**
 * `statusClass` as a SQL expression over a `text` expression (the Stripe receiver's function works out a
 * notification's movements in SQL: src/modules/analytics/mrr-movements-sql.ts).
 */
export function statusClassSql(status: string): string {
  const list = (statuses: readonly string[]) => statuses.map((s) => `'${s}'`).join(', ');
  return `(case when (${status}) is null then 'none'
                when (${status}) in (${list(COUNTED_STATUSES)}) then 'active'
                when (${status}) in (${list(ENDED_STATUSES)}) then 'ended'
                when (${status}) = 'trialing' then 'trialing'
                else 'none' end)`;
}

/** Months per interval as a fraction (numerator, denominator): a year is 12 months, a week 12/52 of one. */
const PER_MONTH: Record<PriceInterval, readonly [number, number]> = {
  month: [1, 1],
  year: [1, 12],
  week: [52, 12],
  day: [365, 12],
};

/** `numerator / denominator` rounded half-up (both non-negative integers, denominator > 0). */
export function halfUp(numerator: number, denominator: number): number {
  return Math.floor((2 * numerator + denominator) / (2 * denominator));
}

/** An amount charged every `intervalCount` `interval`s, as a monthly amount (exact fraction, rounded once). */
export function perMonth(amount: number, interval: PriceInterval, intervalCount: number): number {
  const [numerator, denominator] = PER_MONTH[interval];
  return halfUp(amount * numerator, denominator * Math.max(1, intervalCount));
}

/** An item's monthly amount: 0 for a metered item or a zero price; quantity multiplies before rounding. */
export function itemMrr(item: MrrItem): number {
  if (item.usageType !== 'licensed' || !item.unitAmount || item.unitAmount <= 0) return 0;
  return perMonth(item.unitAmount * Math.max(0, item.quantity), item.interval, item.intervalCount);
}

/** A subscription's MRR inputs. */
export interface MrrInputs {
  /** Tollgate's status (`paused` when collection is paused). */
  readonly status: string;
  readonly items: readonly MrrItem[];
  readonly coupons: readonly MrrCoupon[];
}

/** A subscription's MRR in its currency (`amount` 0 when it does not count). */
export interface SubscriptionMrr {
  readonly currency: string | null;
  /** The normalised amount before its status is considered (what it counts for while paying). */
  readonly listAmount: number;
  /** What it counts for now: `listAmount` while `active`/`past_due`, else 0. */
  readonly amount: number;
  /** The quantity of its licensed items. */
  readonly quantity: number;
}

/**
 * A subscription's monthly recurring revenue: the sum of its items' monthly amounts, less its forever
 * coupons (a percentage of that sum, or a fixed amount per billing period normalised like the items),
 * never below 0; 0 unless its status counts.
 */
export function subscriptionMrr(inputs: MrrInputs): SubscriptionMrr {
  const licensed = inputs.items.filter((item) => item.usageType === 'licensed');
  const currency = licensed[0]?.currency ?? inputs.items[0]?.currency ?? null;
  const gross = licensed.reduce((sum, item) => sum + itemMrr(item), 0);
  const period = licensed[0];
  let discount = 0;
  for (const coupon of inputs.coupons) {
    if (coupon.duration !== 'forever') continue;
    if (coupon.percentOff !== null) {
      // Percentages carry up to two decimals: counted in hundredths of a percent, exactly.
      discount += halfUp(gross * Math.round(coupon.percentOff * 100), 10_000);
    } else if (coupon.amountOff !== null && period && coupon.currency === currency) {
      discount += perMonth(coupon.amountOff, period.interval, period.intervalCount);
    }
  }
  const listAmount = Math.max(0, gross - discount);
  return {
    currency,
    listAmount,
    amount: statusClass(inputs.status) === 'active' ? listAmount : 0,
    quantity: licensed.reduce((sum, item) => sum + item.quantity, 0),
  };
}

/** The kinds of movement, in the order the analytics answer lists them. */
export const MOVEMENT_KINDS = ['new', 'expansion', 'contraction', 'churn', 'reactivation'] as const;
export type MovementKind = (typeof MOVEMENT_KINDS)[number];

/**
 * How a subject's (customer's or organization's) MRR in one currency moved: `new` from 0 for the first
 * time, `reactivation` from 0 after an earlier churn, `churn` to 0, else `expansion` or `contraction`;
 * null when it did not move.
 */
export function movementKind(before: number, after: number, countedBefore: boolean): MovementKind | null {
  if (before === after) return null;
  if (before === 0) return countedBefore ? 'reactivation' : 'new';
  if (after === 0) return 'churn';
  return after > before ? 'expansion' : 'contraction';
}

/**
 * `movementKind` as a SQL expression over SQL expressions (the ledger judges the kind in the statement
 * that records the movement, after reading the subject's MRR); test/service/mrr-ledger-invariant.test.ts
 * checks that the two agree.
 */
export function movementKindSql(before: string, after: string, countedBefore: string): string {
  return `(case when (${before}) = (${after}) then null
                when (${before}) = 0 then case when (${countedBefore}) then 'reactivation' else 'new' end
                when (${after}) = 0 then 'churn'
                when (${after}) > (${before}) then 'expansion'
                else 'contraction' end)`;
}

/** The definitions, as every analytics answer states them. */
export const MRR_DEFINITIONS = {
  mrr: 'The sum, per currency, of the monthly-normalised amounts of subscriptions that are active or past_due: each licensed item normalised to a month (yearly ÷ 12, weekly × 52 ÷ 12, daily × 365 ÷ 12, interval counts honoured), quantity multiplied, rounded half-up per item to the smallest currency unit; trials, paused, unpaid and ended subscriptions, zero prices, metered usage and tax excluded; only coupons with duration forever reduce it.',
  newMrr: 'MRR added by subjects (customers or organizations) going from 0 for the first time.',
  expansionMrr: 'MRR added by subjects whose MRR rose from above 0.',
  contractionMrr: 'MRR lost by subjects whose MRR fell but stayed above 0 (a positive number).',
  churnedMrr: 'MRR lost by subjects whose MRR fell to 0, including a pause (a positive number).',
  reactivationMrr: 'MRR added by subjects going from 0 after an earlier churn, including a resume.',
  activeSubscriptions:
    'Subscriptions counting towards MRR (active or past_due, with a non-zero amount) at the end of the period.',
  trialingSubscriptions: 'Subscriptions trialing at the end of the period.',
  newSubscriptions:
    'Subscriptions that started counting towards MRR or trialing for the first time in the period.',
  canceledSubscriptions: 'Subscriptions that ended (canceled or expired) in the period.',
  trialConversions: 'Subscriptions that went from trialing to counting towards MRR in the period.',
  movements:
    'Each change is its own movement, recorded in the same transaction as the change; movements are never netted within a day.',
} as const;
