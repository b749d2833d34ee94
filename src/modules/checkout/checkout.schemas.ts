import { z } from 'zod';
import type { Metadata } from '../customers/customer.entity.js';
import { emailSchema, METADATA_MAX_KEY_LENGTH } from '../customers/customers.schemas.js';

const absoluteUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => {
    try {
      const url = new URL(value);
      return (
        (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === ''
      );
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL including the scheme');

const id = z.string().min(1, 'must not be empty').max(100, 'must be at most 100 characters');

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
    successUrl: absoluteUrl,
    cancelUrl: absoluteUrl,
    customerId: id.optional(),
    email: emailSchema.optional(),
    organizationId: id.optional(),
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
