import { z } from 'zod';
import { idSchema as id } from '../../core/validation.js';
import { REDIRECT_URL_MAX_LENGTH } from '../auth/auth.schemas.js';
import { emailSchema, metadataSchema } from '../customers/customers.schemas.js';

export const orgRoleSchema = z.enum(['owner', 'admin', 'member'], {
  error: 'must be owner, admin or member',
});

export const createOrganizationSchema = z.strictObject({
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  metadata: metadataSchema.optional(),
  /** With an API key: the customer who becomes the first owner. A session's creator is the owner. */
  ownerCustomerId: id.optional(),
});
export type CreateOrganizationInput = z.infer<typeof createOrganizationSchema>;

export const organizationIdSchema = id;

export const listOrganizationsSchema = z.strictObject({ customerId: id.optional() });

export const addMemberSchema = z.strictObject({
  organizationId: id,
  customerId: id,
  role: orgRoleSchema.default('member'),
});

export const updateMemberRoleSchema = z.strictObject({
  organizationId: id,
  customerId: id,
  role: orgRoleSchema,
});

export const removeMemberSchema = z.strictObject({ organizationId: id, customerId: id });

export const invitationIdSchema = id;

/** An invitation into an organization: whom, with which role, and where its e-mailed link leads. */
export const inviteSchema = z.strictObject({
  email: emailSchema,
  role: orgRoleSchema.default('member'),
  redirectUrl: z
    .string()
    .min(1, 'must not be empty')
    .max(REDIRECT_URL_MAX_LENGTH, `must be at most ${REDIRECT_URL_MAX_LENGTH} characters`),
});
