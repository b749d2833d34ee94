import { z } from 'zod';
import { idSchema as id } from '../../core/validation.js';
import type { Metadata } from '../customers/customer.entity.js';

export const orgRoleSchema = z.enum(['owner', 'admin', 'member'], {
  error: 'must be owner, admin or member',
});

/** Organization metadata: a JSON object of at most 50 keys of 1–40 characters, 16 KiB serialized. */
const metadata = z
  .custom<Metadata>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
    error: 'must be an object',
  })
  .transform((v): Metadata => Object.fromEntries(Object.entries(v)))
  .refine((v) => Object.keys(v).length <= 50, 'must have at most 50 keys')
  .refine(
    (v) => Object.keys(v).every((k) => k.length >= 1 && k.length <= 40),
    'keys must be 1 to 40 characters',
  )
  .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= 16 * 1024, 'must be at most 16 KiB serialized');

export const createOrganizationSchema = z.strictObject({
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  metadata: metadata.optional(),
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
