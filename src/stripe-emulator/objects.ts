import { randomBytes } from 'node:crypto';
import type { Obj } from './parameters.js';

/** What Stripe objects share: ids, timestamps in Unix seconds, billing intervals, change records. */

export const DAY = 86_400;

export const INTERVAL_SECONDS: Record<string, number> = {
  day: DAY,
  week: 7 * DAY,
  month: 30 * DAY,
  year: 365 * DAY,
};

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += BASE62[b % 62];
  return `${prefix}${out}`;
}

export const now = (): number => Math.floor(Date.now() / 1000);

/** The end of a billing period of `price` that starts at `start`. */
export const periodEnd = (price: Obj, start: number): number =>
  start + INTERVAL_SECONDS[price.recurring.interval]! * price.recurring.interval_count;

/** Stripe's `previous_attributes`: the top-level fields that changed, with their old values. */
export function changedAttributes(before: Obj, after: Obj): Obj {
  const previous: Obj = {};
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) previous[key] = before[key] ?? null;
  }
  return previous;
}
