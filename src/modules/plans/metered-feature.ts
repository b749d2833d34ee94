import { z } from 'zod';

/** When a metered feature's allowance starts again. */
export type MeteredReset = 'billing_period' | 'month' | 'day' | 'never';

/**
 * A metered plan feature: `limit` units per period; `rollover.max` caps how much of a period's unused
 * allowance carries into the next one (where it lasts until that period's end). With `overage`,
 * consumption past the balance is allowed and billed per unit at the named Stripe price (metered, backed
 * by a Billing Meter), which checkout and plan changes put on the subscription beside the plan's price.
 */
export interface MeteredFeature {
  readonly limit: number;
  readonly reset: MeteredReset;
  readonly rollover?: { readonly max: number };
  readonly overage?: { readonly stripePriceId: string };
}

/** Amounts are whole units up to a billion: exact in JavaScript numbers and in PostgreSQL `bigint`. */
export const MAX_AMOUNT = 1_000_000_000;

const units = (what: string) =>
  z
    .number()
    .int(`${what} must be a whole number`)
    .min(0, `${what} must not be negative`)
    .max(MAX_AMOUNT, `${what} must be at most ${MAX_AMOUNT}`);

/** A metered feature as a plan accepts it. */
export const meteredFeatureSchema = z.strictObject({
  limit: units('limit'),
  reset: z.enum(['billing_period', 'month', 'day', 'never']),
  rollover: z.strictObject({ max: units('rollover.max') }).optional(),
  overage: z
    .strictObject({
      stripePriceId: z.string().regex(/^[A-Za-z0-9_]{1,255}$/, 'must be a Stripe price id such as price_123'),
    })
    .optional(),
});

/** The overage prices of a plan's metered features, by feature, in the plan's order. */
export function overagePrices(features: Readonly<Record<string, unknown>>): Map<string, string> {
  const prices = new Map<string, string>();
  for (const [name, value] of Object.entries(features)) {
    if (isMetered(value) && value.overage) prices.set(name, value.overage.stripePriceId);
  }
  return prices;
}

/** Whether a plan feature's value is a metered definition (the other values are scalars). */
export function isMetered(value: unknown): value is MeteredFeature {
  return typeof value === 'object' && value !== null && 'limit' in value && 'reset' in value;
}

/** A plan's features as entitlement objects show them: a metered feature reads as its limit. */
export function entitlementFeatures<V>(
  features: Readonly<Record<string, V | MeteredFeature>>,
): Record<string, V | number> {
  const shown: Record<string, V | number> = {};
  for (const [name, value] of Object.entries(features))
    shown[name] = isMetered(value) ? value.limit : (value as V);
  return shown;
}

/**
 * One period of a metered feature: `[start, end)`. `end` is also the period's key in the database;
 * a feature that never resets has one period from the epoch to FOREVER, and no `resetsAt`.
 */
export interface Period {
  readonly start: Date;
  readonly end: Date;
  /** The period before this one (for rollover); none for a feature that never resets. */
  readonly previous: { readonly start: Date; readonly end: Date } | null;
  readonly resetsAt: Date | null;
}

/** The key of the one period of a feature that never resets. */
export const FOREVER = new Date(Date.UTC(9999, 0, 1));
const EPOCH = new Date(0);

/** `months` calendar months after `date` (UTC), the day clamped to the month's length (Jan 31 → Feb 28). */
export function addMonths(date: Date, months: number): Date {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      y,
      m,
      Math.min(date.getUTCDate(), lastDay),
      date.getUTCHours(),
      date.getUTCMinutes(),
      date.getUTCSeconds(),
      date.getUTCMilliseconds(),
    ),
  );
}

/**
 * The period `now` falls in, derived from the clock alone (no job has to run at a boundary).
 * `billing_period` steps whole months from the subscription's current period end (its billing anchor),
 * so a renewal the database has not heard of yet still starts a new period on time; without a
 * subscription it is the UTC calendar month.
 */
export function periodAt(reset: MeteredReset, now: Date, billingAnchor: Date | null): Period {
  switch (reset) {
    case 'never':
      return { start: EPOCH, end: FOREVER, previous: null, resetsAt: null };
    case 'day': {
      const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
      const end = new Date(start.getTime() + 86_400_000);
      return {
        start,
        end,
        previous: { start: new Date(start.getTime() - 86_400_000), end: start },
        resetsAt: end,
      };
    }
    case 'billing_period':
      if (billingAnchor !== null) return anchoredMonth(billingAnchor, now);
      return calendarMonth(now);
    case 'month':
      return calendarMonth(now);
  }
}

function calendarMonth(now: Date): Period {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const previous = { start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)), end: start };
  return { start, end, previous, resetsAt: end };
}

/** The monthly period around `now` whose boundaries are whole months from `anchor`. */
function anchoredMonth(anchor: Date, now: Date): Period {
  // Months between the anchor and now, then corrected by one either way for day-of-month clamping.
  let k = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  while (addMonths(anchor, k).getTime() <= now.getTime()) k++;
  while (addMonths(anchor, k - 1).getTime() > now.getTime()) k--;
  const end = addMonths(anchor, k);
  const start = addMonths(anchor, k - 1);
  return { start, end, previous: { start: addMonths(anchor, k - 2), end: start }, resetsAt: end };
}
