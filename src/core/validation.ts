import { z } from 'zod';
import { ValidationError } from './errors.js';

/**
 * Validates input against a command schema, turning every problem into one ValidationError whose
 * message names the offending fields, e.g. `email: must be a valid e-mail address; unknown field: foo`.
 * Both transports call services that call this, so REST and GraphQL reject the same input alike.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  // `reportInput` puts the offending value on each issue, which tells a missing field from a mistyped one.
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const messages = result.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const prefix = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
      return `${prefix}unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`;
    }
    const field = issue.path.join('.');
    if (issue.code === 'invalid_type' && issue.input === undefined) {
      return `${field || 'body'}: is required`;
    }
    return field ? `${field}: ${issue.message}` : issue.message;
  });
  const fields = [
    ...new Set(
      result.error.issues.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : [i.path.join('.')])),
    ),
  ].filter(Boolean);
  throw new ValidationError([...new Set(messages)].join('; '), { fields });
}

/** Any id a caller names (an app, customer, organization, plan…): one measure and one message everywhere. */
export const idSchema = z.string().min(1, 'must not be empty').max(100, 'must be at most 100 characters');

/**
 * An absolute http(s) URL that a browser may be sent to: a scheme, and no user info (which would let a
 * link show one host and log in to another).
 */
export const absoluteUrlSchema = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => {
    try {
      const url = new URL(value);
      return (
        (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === ''
      );
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL including the scheme');
