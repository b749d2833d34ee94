import { z } from 'zod';
import { absoluteUrlSchema } from '../../core/validation.js';
import { InvalidPatternError, parseCallbackPatterns } from './callback-url.js';

const callbackPatterns = z
  .string()
  .max(10_000)
  .superRefine((text, ctx) => {
    try {
      parseCallbackPatterns(text);
    } catch (error) {
      if (!(error instanceof InvalidPatternError)) throw error;
      ctx.addIssue({ code: 'custom', message: `invalid pattern ${error.message}` });
    }
  });

/** App settings as both APIs accept them; every field optional so updates are partial. */
export const appSettingsSchema = z.strictObject({
  autoCreateCustomer: z.boolean().optional(),
  magicLinkExpiryMinutes: z
    .number()
    .int('must be a whole number of minutes')
    .min(1, 'must be at least 1 minute')
    .max(1440, 'must be at most 1440 minutes (24 hours)')
    .optional(),
  invitationExpiryHours: z
    .number()
    .int('must be a whole number of hours')
    .min(1, 'must be at least 1 hour')
    .max(720, 'must be at most 720 hours (30 days)')
    .optional(),
  allowedCallbackUrls: callbackPatterns.optional(),
  customVerificationUrl: absoluteUrlSchema.nullable().optional(),
  trialPaymentMethod: z.enum(['require_payment_method', 'no_payment_method']).optional(),
  organizationsEnabled: z.boolean().optional(),
  allowMultipleSubscriptions: z.boolean().optional(),
  sessionTtlSeconds: z
    .number()
    .int('must be a whole number of seconds')
    .min(60, 'must be at least 60 seconds')
    .max(31_536_000, 'must be at most one year (31536000 seconds)')
    .optional(),
  entitlementTokenTtlSeconds: z
    .number()
    .int('must be a whole number of seconds')
    .min(30, 'must be at least 30 seconds')
    .max(3600, 'must be at most 3600 seconds')
    .optional(),
});
export type AppSettingsInput = z.infer<typeof appSettingsSchema>;

export const createAppSchema = appSettingsSchema.extend({
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
});
export type CreateAppInput = z.infer<typeof createAppSchema>;

/** A new API key: what the operator calls it (which server or job holds it); empty or absent: unnamed. */
export const createApiKeySchema = z.strictObject({
  name: z
    .string()
    .trim()
    .max(100, 'must be at most 100 characters')
    .nullish()
    .transform((name) => (name ? name : null)),
});

/** A URL to test against an app's patterns: any text (a malformed one is simply not allowed). */
export const callbackUrlCandidateSchema = z.string().max(2048, 'must be at most 2048 characters');
