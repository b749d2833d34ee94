import { z } from 'zod';
import { absoluteUrlSchema, idSchema } from '../../core/validation.js';
import type { Metadata } from '../customers/customer.entity.js';
import { emailSchema, METADATA_MAX_KEY_LENGTH } from '../customers/customers.schemas.js';

const metadata = z
  .custom<Metadata>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    error: 'must be an object',
  })
  .refine(
    (value) =>
      Object.keys(value).every((key) => key.length > 0 && [...key].length <= METADATA_MAX_KEY_LENGTH),
    `keys must be 1 to ${METADATA_MAX_KEY_LENGTH} characters`,
  )
  .transform((value): Metadata => Object.fromEntries(Object.entries(value)));

/** The checkout body of the interface, every field. */
export const checkoutSchema = z
  .strictObject({
    planId: z.string().min(1, 'must not be empty').max(63, 'must be at most 63 characters'),
    successUrl: absoluteUrlSchema,
    cancelUrl: absoluteUrlSchema,
    customerId: idSchema.optional(),
    email: emailSchema.optional(),
    organizationId: idSchema.optional(),
    couponCode: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .optional(),
    collectBillingAddress: z.boolean().optional(),
    metadata: metadata.optional(),
  })
  .refine(
    (body) =>
      [body.customerId, body.email, body.organizationId].filter((value) => value !== undefined).length === 1,
    { message: 'exactly one of customerId, email or organizationId is required' },
  );
export type CheckoutInput = z.infer<typeof checkoutSchema>;
