import { z } from 'zod';
import { idSchema } from '../../core/validation.js';
import { metadataSchema } from '../customers/customers.schemas.js';
import { featureSchema } from '../entitlements/entitlements.schemas.js';
import { MAX_AMOUNT } from '../plans/metered-feature.js';

/** Units to consume or grant: a whole number from 1. */
export const amountSchema = z
  .number()
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`);

/** `?amount=` of a check: digits in a query string, 1 when left out. */
export const amountQuerySchema = z
  .union([z.string().regex(/^\d{1,10}$/, 'must be a whole number'), z.number()])
  .transform((v) => Number(v))
  .pipe(amountSchema)
  .optional();

/** Who: for an API key exactly one of the two; a session uses its own context. */
const subjectFields = { customerId: idSchema.optional(), organizationId: idSchema.optional() };

/** `POST /v1/usage` / `recordUsage`. */
export const usageInputSchema = z.strictObject({
  ...subjectFields,
  feature: featureSchema,
  amount: amountSchema.default(1),
  metadata: metadataSchema.default({}),
});

/** `POST /v1/credit-grants` / `createCreditGrant`. */
export const grantInputSchema = z.strictObject({
  ...subjectFields,
  feature: featureSchema,
  amount: amountSchema,
  priority: z.number().int('must be a whole number').min(0).max(100).default(50),
  expiresAt: z.iso
    .datetime({ offset: true, message: 'must be an ISO 8601 date-time' })
    .transform((v) => new Date(v))
    .nullable()
    .default(null),
  description: z.string().max(500, 'must be at most 500 characters').nullable().default(null),
});

/** The subject fields of an input, read before anything else is validated. */
export function subjectQuery(input: unknown): Record<string, unknown> {
  if (typeof input !== 'object' || input === null) return {};
  const fields: Record<string, unknown> = {};
  for (const key of ['customerId', 'organizationId'] as const) {
    if (Object.hasOwn(input, key) && (input as Record<string, unknown>)[key] !== undefined) {
      fields[key] = (input as Record<string, unknown>)[key];
    }
  }
  return fields;
}

export const usageIdSchema = idSchema;
export const grantIdSchema = idSchema;
