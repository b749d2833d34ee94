import { z } from 'zod';
import { idSchema } from '../../core/validation.js';
import { PRORATION_BEHAVIORS } from '../payments/payment-provider.js';

/** `POST /v1/subscriptions/:id/cancel` and `cancelSubscription`: now by default, or at the end of the period. */
export const cancelSubscriptionSchema = z.strictObject({ atPeriodEnd: z.boolean().optional() });

/** Pause and resume take no options; anything sent is refused rather than silently ignored. */
export const noOptionsSchema = z.strictObject({});

/** Subscription ids are `sub_` + 32 characters; anything far longer cannot exist. */
export const subscriptionIdSchema = z.string().min(1).max(100);

/**
 * `POST /v1/subscriptions/:id/change-plan` (and its preview) and `changeSubscriptionPlan`: the target plan
 * of the app and how Stripe charges the rest of the period, in Stripe's words (default `create_prorations`).
 */
export const changePlanSchema = z.strictObject({
  planId: idSchema,
  prorationBehavior: z.enum(PRORATION_BEHAVIORS).optional(),
});
