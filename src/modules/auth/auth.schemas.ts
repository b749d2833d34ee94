import { z } from 'zod';
import { idSchema } from '../../core/validation.js';
import { emailSchema } from '../customers/customers.schemas.js';

export const REDIRECT_URL_MAX_LENGTH = 2048;
/** Longer than any token Tollgate issues; anything longer is not worth a database lookup. */
const TOKEN_MAX_LENGTH = 512;

/**
 * The e-mail follows the customer rule (one plain address: no lists, quoted local parts, display names,
 * full-width `＠`, CR/LF or markup), so a message can only ever have that one recipient.
 */
export const requestMagicLinkSchema = z.strictObject({
  email: emailSchema,
  redirectUrl: z
    .string()
    .min(1, 'must not be empty')
    .max(REDIRECT_URL_MAX_LENGTH, `must be at most ${REDIRECT_URL_MAX_LENGTH} characters`),
});
export type RequestMagicLinkInput = z.infer<typeof requestMagicLinkSchema>;

const token = z.string().min(1, 'must not be empty').max(TOKEN_MAX_LENGTH, 'is not a valid token');

export const verifyMagicLinkSchema = z.strictObject({ token });
export type VerifyMagicLinkInput = z.infer<typeof verifyMagicLinkSchema>;

/** The e-mailed link: it must ask for the redirect, since this form never consumes the token. */
export const openMagicLinkSchema = z.object({
  token,
  redirect: z.literal('true', {
    error: 'must be true (to verify a token without redirecting, POST it to …/auth/verify)',
  }),
});
export type OpenMagicLinkInput = z.infer<typeof openMagicLinkSchema>;

/** Switching a session into the context of one of its customer's organizations. */
export const switchOrganizationSchema = z.strictObject({ organizationId: idSchema });
export type SwitchOrganizationInput = z.infer<typeof switchOrganizationSchema>;
