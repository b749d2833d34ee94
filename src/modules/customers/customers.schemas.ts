import { z } from 'zod';
import { ValidationError } from '../../core/errors.js';
import { paginationSchema } from '../../core/pagination.js';
import type { Metadata } from './customer.entity.js';

/** Metadata limits (Tollgate's choice; the interface shows none). */
export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_KEY_LENGTH = 40;
export const METADATA_MAX_BYTES = 16 * 1024;

/** RFC 5321 §4.5.3.1: a path is at most 256 octets with its angle brackets, so an address 254. */
export const EMAIL_MAX_LENGTH = 254;
/** RFC 5321 §4.5.3.1.1: the local part (before the `@`) is at most 64 octets. */
export const EMAIL_LOCAL_PART_MAX_LENGTH = 64;
/** RFC 1035 §2.3.4: each label of the domain is at most 63 octets. */
export const EMAIL_DOMAIN_LABEL_MAX_LENGTH = 63;
export const NAME_MAX_LENGTH = 200;

/**
 * An RFC 5322 dot-atom local part (so `+`, `%`, `_` and the like are accepted) at a DNS name of two or
 * more labels. Quoted local parts, IP literals and non-ASCII addresses are refused, so characters and
 * octets are the same count below. The lengths are checked separately, first, so the 400 says which
 * limit an address exceeds instead of only that it is invalid.
 */
const EMAIL_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])$/;

/** Which RFC 5321 length limit an address exceeds, if any. */
function emailLengthProblem(address: string): string | undefined {
  if (address.length > EMAIL_MAX_LENGTH) return `must be at most ${EMAIL_MAX_LENGTH} characters`;
  const at = address.lastIndexOf('@');
  if (at === -1) return undefined;
  if (at > EMAIL_LOCAL_PART_MAX_LENGTH) {
    return `the part before @ must be at most ${EMAIL_LOCAL_PART_MAX_LENGTH} characters`;
  }
  if (
    address
      .slice(at + 1)
      .split('.')
      .some((label) => label.length > EMAIL_DOMAIN_LABEL_MAX_LENGTH)
  ) {
    return `each dot-separated part of the domain must be at most ${EMAIL_DOMAIN_LABEL_MAX_LENGTH} characters`;
  }
  return undefined;
}

/**
 * A customer e-mail address as every way of creating a customer, requesting a magic link or starting a
 * checkout accepts it (the one e-mail schema: auth and checkout import it from here).
 */
export const emailSchema = z.string().superRefine((address, ctx) => {
  const problem = emailLengthProblem(address);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
  else if (!EMAIL_PATTERN.test(address))
    ctx.addIssue({ code: 'custom', message: 'must be a valid e-mail address' });
});

const name = z
  .string()
  .min(1, 'must not be empty')
  .max(NAME_MAX_LENGTH, `must be at most ${NAME_MAX_LENGTH} characters`);

/**
 * A metadata object as sent, for customers, organizations and checkouts alike: a JSON object whose keys
 * are 1–40 characters (code points, so an emoji counts once). The copy is made with `Object.fromEntries`
 * so that a key such as `__proto__` stays an ordinary key instead of being dropped. The size limits
 * (`assertMetadataLimits`) apply to the value that is stored, which for a customer is the merge result.
 */
export const metadataSchema = z
  .custom<Metadata>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    error: 'must be an object',
  })
  .superRefine((value, ctx) => {
    for (const key of Object.keys(value)) {
      const length = [...key].length;
      if (length === 0 || length > METADATA_MAX_KEY_LENGTH) {
        ctx.addIssue({
          code: 'custom',
          message: `keys must be 1 to ${METADATA_MAX_KEY_LENGTH} characters (got one of ${length})`,
        });
        return;
      }
    }
  })
  .transform((value): Metadata => Object.fromEntries(Object.entries(value)));

export const createCustomerSchema = z.strictObject({
  email: emailSchema,
  name: name.nullable().optional(),
  metadata: metadataSchema.optional(),
});
export type CreateCustomerInput = z.infer<typeof createCustomerSchema>;

export const updateCustomerSchema = z.strictObject({
  name: name.nullable().optional(),
  metadata: metadataSchema.optional(),
});
export type UpdateCustomerInput = z.infer<typeof updateCustomerSchema>;

export const listCustomersSchema = z.strictObject({
  email: z.string().max(EMAIL_MAX_LENGTH, `must be at most ${EMAIL_MAX_LENGTH} characters`).optional(),
  ...paginationSchema,
});
export type ListCustomersInput = z.infer<typeof listCustomersSchema>;

/**
 * The interface's merge rule: sent keys are added or overwrite, a key sent as `null` is removed,
 * unsent keys are kept. A create is the same merge onto an empty object.
 */
export function mergeMetadata(current: Metadata, patch: Metadata): Metadata {
  const merged = new Map(Object.entries(current));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key);
    else merged.set(key, value);
  }
  return Object.fromEntries(merged);
}

/** Limits apply to the stored result, so a merge that would exceed them is refused as a whole. */
export function assertMetadataLimits(value: Metadata): void {
  const keys = Object.keys(value).length;
  if (keys > METADATA_MAX_KEYS) {
    throw ValidationError.forField(
      'metadata',
      `must have at most ${METADATA_MAX_KEYS} keys (would have ${keys})`,
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > METADATA_MAX_BYTES) {
    throw ValidationError.forField(
      'metadata',
      `must be at most ${METADATA_MAX_BYTES} bytes as JSON (would be ${bytes})`,
    );
  }
}
