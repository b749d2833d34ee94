import { z } from 'zod';
import { paginationSchema } from '../../core/pagination.js';
import { idSchema } from '../../core/validation.js';

/**
 * Whose invoices: an API key names exactly one of a customer or an organization; a session may leave
 * both out (its own context) or name its own customer. `limit` arrives as text in a query string.
 */
export const listInvoicesSchema = z.strictObject({
  customerId: idSchema.optional(),
  organizationId: idSchema.optional(),
  limit: paginationSchema.limit,
});
