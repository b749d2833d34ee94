import { z } from 'zod';
import { idSchema as id } from '../../core/validation.js';
import { metadataSchema } from '../customers/customers.schemas.js';

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
