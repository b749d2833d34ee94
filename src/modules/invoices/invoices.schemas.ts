import { z } from 'zod';
import { idSchema } from '../../core/validation.js';

/**
 * Whose invoices: an API key names exactly one of a customer or an organization; a session may leave
 * both out (its own context) or name its own customer. `limit` arrives as text in a query string.
 */
export const listInvoicesSchema = z.strictObject({
  customerId: idSchema.optional(),
  organizationId: idSchema.optional(),
  limit: z.coerce
    .number()
    .int()
    .min(1, 'must be between 1 and 100')
    .max(100, 'must be between 1 and 100')
    .default(20),
});
