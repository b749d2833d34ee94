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

/**
 * Deepest nesting of objects and arrays a JSON input may have. Real inputs (metadata, GraphQL variables)
 * are a few levels deep; deeper values only make the recursive code behind us (schema checks, JSON
 * serialisation, PostgreSQL's jsonb) work harder or overflow.
 */
export const MAX_INPUT_DEPTH = 32;

/** Why an input cannot be taken as it is, and where (`body.metadata.note`, `query.email`, `path`). */
export interface InputProblem {
  readonly at: string;
  readonly problem: string;
}

const NUL = 'contains a NUL character (U+0000), which cannot be stored';
const LONE_SURROGATE = 'contains an unpaired UTF-16 surrogate, which is not valid Unicode';

/** A high surrogate not followed by a low one, or a low one not preceded by a high one (code units, no `u` flag). */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with one piece of text, if anything: PostgreSQL refuses NUL, and UTF-8 has no lone surrogates. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return NUL;
  if (UNPAIRED_SURROGATE.test(text)) return LONE_SURROGATE;
  return undefined;
}

/** A readable path segment: user-chosen keys are shown only when short and plain, never echoed raw. */
function segment(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  return /^[A-Za-z0-9_$-]{1,40}$/.test(key) ? `.${key}` : '.<key>';
}

/**
 * The first part of a decoded input (a JSON body, parsed query parameters, GraphQL variables) that
 * PostgreSQL or JSON cannot take faithfully: text with NUL or lone surrogates (in values and keys),
 * numbers that are not finite (`1e400` parses to Infinity and would be stored as null), integers past
 * 2^53 − 1 (which JSON parsing rounds to a neighbouring double), nesting deeper
 * than `maxDepth`. Walks with an explicit stack, so hostile depth cannot overflow the call stack.
 * `text: false` leaves text to a later layer (GraphQL checks its own argument values).
 */
export function findInputProblem(
  value: unknown,
  root: string,
  options: { readonly text?: boolean; readonly maxDepth?: number } = {},
): InputProblem | undefined {
  const checkText = options.text ?? true;
  const maxDepth = options.maxDepth ?? MAX_INPUT_DEPTH;
  const stack: { value: unknown; at: string; depth: number }[] = [{ value, at: root, depth: 0 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const current = item.value;
    if (typeof current === 'string') {
      const problem = checkText ? textProblem(current) : undefined;
      if (problem) return { at: item.at, problem };
    } else if (typeof current === 'number') {
      if (!Number.isFinite(current)) {
        return { at: item.at, problem: 'is a number too large to be represented (finite doubles only)' };
      }
      // Past 2^53 − 1 not every integer is a double: `9007199254740993` parses as …992, silently.
      if (Number.isInteger(current) && Math.abs(current) > Number.MAX_SAFE_INTEGER) {
        return {
          at: item.at,
          problem: 'is an integer too large to be kept exactly (at most 9007199254740991 either way)',
        };
      }
    } else if (typeof current === 'object' && current !== null) {
      if (item.depth >= maxDepth) {
        return { at: item.at, problem: `is nested more than ${maxDepth} levels deep` };
      }
      const entries: [string | number, unknown][] = Array.isArray(current)
        ? current.map((v, i) => [i, v])
        : Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        if (checkText && typeof key === 'string') {
          const problem = textProblem(key);
          if (problem) return { at: item.at, problem: `has a key that ${problem}` };
        }
        stack.push({ value: child, at: `${item.at}${segment(key)}`, depth: item.depth + 1 });
      }
    }
  }
  return undefined;
}

/** `body.email: contains a NUL character …`: the message of the 400 that refuses such an input. */
export function describeInputProblem({ at, problem }: InputProblem): string {
  return `${at}: ${problem}`;
}

/**
 * Whether UTF-8 JSON text nests objects/arrays deeper than `maxDepth`, found by one linear scan of the
 * raw bytes before anything is parsed (brackets inside strings do not count; in UTF-8 an ASCII byte is
 * never part of another character).
 */
export function jsonNestingExceeds(bytes: Uint8Array, maxDepth: number = MAX_INPUT_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      // A backslash escapes the next byte, whatever it is.
      if (byte === 0x5c) i++;
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) return true;
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--;
    }
  }
  return false;
}
