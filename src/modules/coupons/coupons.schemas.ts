import { z } from 'zod';
import { idSchema } from '../../core/validation.js';

/** `validateCoupon(code, planId)`: the customer-facing promotion code and the plan's id (its slug). */
export const validateCouponSchema = z.strictObject({
  code: z.string().trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters'),
  planId: idSchema,
});
