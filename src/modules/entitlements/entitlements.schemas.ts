import { z } from 'zod';

const id = z.string().min(1, 'must not be empty').max(100, 'must be at most 100 characters');

/** Whose entitlements an API key asks for: exactly one of `customerId`, `organizationId`. */
export const entitlementQuerySchema = z
  .strictObject({ customerId: id.optional(), organizationId: id.optional() })
  .refine((q) => (q.customerId === undefined) !== (q.organizationId === undefined), {
    message: 'exactly one of customerId or organizationId is required',
  });
export type EntitlementQuery = z.infer<typeof entitlementQuerySchema>;

export const featureSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters');
