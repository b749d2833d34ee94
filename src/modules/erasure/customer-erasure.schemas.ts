import { idSchema } from '../../core/validation.js';

/** A customer id as sent in a path or argument (an over-long one cannot exist: 400 names it). */
export const customerIdSchema = idSchema;
