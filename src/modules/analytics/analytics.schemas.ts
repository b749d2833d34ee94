import { z } from 'zod';

/** A UTC calendar date, `YYYY-MM-DD`, that exists. */
const dateSchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date as YYYY-MM-DD')
  .refine((v) => new Date(`${v}T00:00:00Z`).toISOString().startsWith(v), 'must be a date that exists');

export const ANALYTICS_INTERVALS = ['day', 'week', 'month'] as const;
export type AnalyticsInterval = (typeof ANALYTICS_INTERVALS)[number];

/** `GET /v1/analytics` / `analytics`: both dates inclusive. */
export const analyticsQuerySchema = z.strictObject({
  from: dateSchema,
  to: dateSchema,
  interval: z.enum(ANALYTICS_INTERVALS).default('month'),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO currency code')
    .transform((v) => v.toLowerCase())
    .optional(),
});

export type AnalyticsQuery = z.infer<typeof analyticsQuerySchema>;
