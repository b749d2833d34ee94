import { z } from 'zod';
import { meteredFeatureSchema } from './metered-feature.js';
import { planSeatsSchema } from './plan-seats.js';

/** The operator's plan id (e.g. `pro`): the public `id` of a plan in both APIs. */
export const planSlugSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,62}$/,
    'must be 1 to 63 lowercase letters, digits, "-" or "_", starting with a letter or digit',
  );

const featureValue = z.union([
  z.boolean(),
  z.number().finite('must be a finite number'),
  z.string().max(1000, 'must be at most 1000 characters'),
  meteredFeatureSchema,
]);

/** A plan as `upsertPlan` accepts it; fields left out keep their value on an existing plan. */
export const planInputSchema = z.strictObject({
  id: planSlugSchema,
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  stripePriceId: z
    .string()
    .regex(/^[A-Za-z0-9_]{1,255}$/, 'must be a Stripe price id such as price_123')
    .nullable()
    .optional(),
  trialDays: z
    .number()
    .int('must be a whole number of days')
    .min(0, 'must not be negative')
    .max(730, 'must be at most 730 days')
    .optional(),
  features: z
    .record(
      z
        .string()
        .min(1, 'feature names must not be empty')
        .max(100, 'feature names must be at most 100 characters'),
      featureValue,
    )
    .refine((f) => Object.keys(f).length <= 200, 'at most 200 features')
    .optional(),
  isDefault: z.boolean().optional(),
  /** true: no new checkouts or plan changes to it; existing subscriptions keep it. */
  archived: z.boolean().optional(),
  /** null takes the seats away from an existing plan. */
  seats: planSeatsSchema.nullable().optional(),
});
export type PlanInput = z.infer<typeof planInputSchema>;

/** A price to create at Stripe for a plan (amount in the currency's smallest unit). */
export const planPriceSchema = z.strictObject({
  productName: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  unitAmount: z.number().int('must be a whole number of the smallest currency unit').min(0).max(99_999_999),
  currency: z
    .string()
    .regex(/^[a-z]{3}$/, 'must be a three-letter ISO currency code in lowercase')
    .default('usd'),
  interval: z.enum(['day', 'week', 'month', 'year']).default('month'),
});
