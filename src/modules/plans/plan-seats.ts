import { z } from 'zod';

/**
 * How a plan sells seats of an organization: `limit` caps the members a plan includes; `per_seat` bills
 * the subscription's quantity as the member count, between `min` and an optional `max`.
 */
export type PlanSeats =
  | { readonly mode: 'limit'; readonly included: number }
  | { readonly mode: 'per_seat'; readonly min: number; readonly max?: number };

export const MAX_SEATS = 1_000_000;

const seatCount = (what: string, least: number) =>
  z
    .number()
    .int(`${what} must be a whole number`)
    .min(least, `${what} must be at least ${least}`)
    .max(MAX_SEATS, `${what} must be at most ${MAX_SEATS}`);

/** `seats` as a plan accepts it (the GraphQL input's unused fields come as null and are dropped first). */
export const planSeatsSchema = z.preprocess(
  (value) =>
    typeof value === 'object' && value !== null
      ? Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined))
      : value,
  z
    .discriminatedUnion(
      'mode',
      [
        z.strictObject({ mode: z.literal('limit'), included: seatCount('included', 0) }),
        z.strictObject({
          mode: z.literal('per_seat'),
          min: seatCount('min', 1).default(1),
          max: seatCount('max', 1).optional(),
        }),
      ],
      { error: 'mode must be limit or per_seat' },
    )
    .refine((s) => s.mode !== 'per_seat' || s.max === undefined || s.max >= s.min, {
      message: 'max must not be below min',
    }),
);

/** The most seats a plan allows an organization; null: no cap (per-seat without `max`, or no seats). */
export function seatLimit(seats: PlanSeats | null | undefined): number | null {
  if (!seats) return null;
  return seats.mode === 'limit' ? seats.included : (seats.max ?? null);
}
