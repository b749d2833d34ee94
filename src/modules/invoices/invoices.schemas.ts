import { z } from 'zod';
import { idSchema } from '../../core/validation.js';

/** Whose invoices: an API key names the customer; a session may leave it out (or name itself). */
export const listInvoicesSchema = z.strictObject({
  customerId: idSchema.optional(),
  limit: z
    .number()
    .int()
    .min(1, 'must be between 1 and 100')
    .max(100, 'must be between 1 and 100')
    .default(20),
});
