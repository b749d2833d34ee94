import { z } from 'zod';

/** `POST /v1/subscriptions/:id/cancel` and `cancelSubscription`: now by default, or at the end of the period. */
export const cancelSubscriptionSchema = z.strictObject({ atPeriodEnd: z.boolean().optional() });

/** Pause and resume take no options; anything sent is refused rather than silently ignored. */
export const noOptionsSchema = z.strictObject({});

/** Subscription ids are `sub_` + 32 characters; anything far longer cannot exist. */
export const subscriptionIdSchema = z.string().min(1).max(100);
