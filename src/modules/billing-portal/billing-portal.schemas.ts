import { z } from 'zod';
import { absoluteUrlSchema, idSchema } from '../../core/validation.js';

/**
 * `POST /v1/billing-portal/session` with an API key: where Stripe sends the customer back, and exactly
 * one of the customer or organization whose billing the portal opens.
 */
export const apiKeyPortalSessionSchema = z
  .strictObject({
    returnUrl: absoluteUrlSchema,
    customerId: idSchema.optional(),
    organizationId: idSchema.optional(),
  })
  .refine((body) => (body.customerId === undefined) !== (body.organizationId === undefined), {
    message: 'exactly one of customerId or organizationId is required',
  });

/** The same with a customer session token: its own context, so only where to come back to. */
export const sessionPortalSessionSchema = z.strictObject({ returnUrl: absoluteUrlSchema });
