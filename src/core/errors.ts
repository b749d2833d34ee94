/**
 * The one error vocabulary of the core. Services throw only these; the REST envelope mapper
 * (src/rest/error-envelope.ts) and the GraphQL mapper (src/graphql/format-error.ts) each translate
 * every code exhaustively, so adding a code without mapping it fails the type check.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'rate_limited'
  | 'provider_error'
  | 'provider_unavailable';

/** What a client can act on beyond the message; both mappers expose it. */
export interface DomainErrorDetails {
  /** The input fields the error concerns (dotted paths for nested ones), so a form can mark them. */
  readonly fields?: readonly string[];
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: DomainErrorDetails = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends DomainError {
  constructor(message: string, details?: DomainErrorDetails) {
    super('validation_failed', message, details);
  }

  /** One field's problem, in the `field: problem` form that `parseInput` gives schema errors. */
  static forField(field: string, problem: string): ValidationError {
    return new ValidationError(`${field}: ${problem}`, { fields: [field] });
  }
}

export class UnauthorizedError extends DomainError {
  constructor(message = 'Invalid or missing credentials') {
    super('unauthorized', message);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message = 'Insufficient permissions') {
    super('forbidden', message);
  }
}

export class NotFoundError extends DomainError {
  constructor(resource: string, id?: string) {
    super('not_found', id === undefined ? `${resource} not found` : `${resource} ${id} not found`);
  }
}

export class ConflictError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
  }
}

export class PayloadTooLargeError extends DomainError {
  constructor(message = 'Request body is too large') {
    super('payload_too_large', message);
  }
}

export class RateLimitedError extends DomainError {
  constructor(
    message = 'Rate limit exceeded',
    readonly retryAfterSeconds?: number,
  ) {
    super('rate_limited', message);
  }
}

/** The payment provider answered with an error we cannot turn into a client error. */
export class ProviderError extends DomainError {
  constructor(message = 'The payment provider rejected the request') {
    super('provider_error', message);
  }
}

/** The payment provider (or another upstream) could not be reached. */
export class ProviderUnavailableError extends DomainError {
  constructor(message = 'The payment provider is unavailable, try again later') {
    super('provider_unavailable', message);
  }
}

/** Compile-time exhaustiveness guard for switches over closed unions. */
export function assertUnreachable(value: never): never {
  throw new Error(`Unhandled case: ${String(value)}`);
}

/** HTTP status of each domain error code: the single source for both transports. */
export function statusOf(code: ErrorCode): number {
  switch (code) {
    case 'validation_failed':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'conflict':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'rate_limited':
      return 429;
    case 'provider_error':
      return 502;
    case 'provider_unavailable':
      return 503;
    default:
      return assertUnreachable(code);
  }
}
