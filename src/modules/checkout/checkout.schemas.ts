import { z } from 'zod';
import { absoluteUrlSchema, idSchema } from '../../core/validation.js';
import { emailSchema, metadataSchema } from '../customers/customers.schemas.js';

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
    metadata: metadataSchema.optional(),
  })
  .refine(
    (body) =>
      [body.customerId, body.email, body.organizationId].filter((value) => value !== undefined).length === 1,
    { message: 'exactly one of customerId, email or organizationId is required' },
  );
export type CheckoutInput = z.infer<typeof checkoutSchema>;
