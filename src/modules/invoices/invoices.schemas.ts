import { z } from 'zod';

/** Whose invoices: an API key names the customer; a session may leave it out (or name itself). */
export const listInvoicesSchema = z.strictObject({
  customerId: z.string().min(1, 'must not be empty').max(100, 'must be at most 100 characters').optional(),
  limit: z
    .number()
    .int()
    .min(1, 'must be between 1 and 100')
    .max(100, 'must be between 1 and 100')
    .default(20),
});
