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
  | 'provider_unavailable'
  | 'service_unavailable';

/**
 * What is known beyond the message. `fields` is for the client: both mappers expose it. Anything else
 * (a provider event's id, say) is for the operator's log only.
 */
export interface DomainErrorDetails {
  /** The input fields the error concerns (dotted paths for nested ones), so a form can mark them. */
  readonly fields?: readonly string[];
  readonly [key: string]: unknown;
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

/**
 * Our own database cannot serve the request now (unreachable, too slow, out of connections). Carries the
 * driver's reason for the log only; the caller learns nothing about the infrastructure.
 */
export class ServiceUnavailableError extends DomainError {
  constructor(readonly reason: string) {
    super('service_unavailable', 'The service is temporarily unavailable, try again later');
  }
}

/**
 * SQLSTATE classes and codes that say the server cannot serve us now, not that the request is wrong:
 * 08 connection exception, 53 insufficient resources (too many connections…), 57 operator intervention
 * (57014 is a statement cancelled by `statement_timeout`, 57P01-03 shutdown and start-up), and 25P03
 * (the server ended a transaction left idle past `idle_in_transaction_session_timeout`).
 */
const UNAVAILABLE_SQLSTATE = /^(08|53|57)|^25P03$/;
/**
 * 55000 (object not in prerequisite state) is mostly a request's own mistake, but PostgreSQL also uses it
 * for a database that is closed to new connections (`ALLOW_CONNECTIONS false`, as during maintenance or
 * a restore): that one is an outage like the others, and must answer as they do.
 */
const CLOSED_DATABASE = /^database ".*" is not currently accepting connections$/;
/** Socket failures between us and the database. */
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/**
 * node-postgres and its pool report timeouts and dead connections as plain errors without a code; their
 * messages are the only signal. A pg upgrade that rewords them turns outages into 500s, which
 * test/integration/database-timeouts.test.ts and test/security/database-freeze.test.ts would catch.
 */
const UNAVAILABLE_PG_MESSAGES = [
  'Query read timeout',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Connection terminated unexpectedly',
  'Connection terminated',
  'timeout expired',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

function databaseUnavailableReason(error: unknown): string | undefined {
  // MikroORM wraps driver errors (copying their code) and pg-pool wraps connect failures in `cause`.
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET_CODES.has(code)))
      return e.message;
    if (code === '55000' && CLOSED_DATABASE.test(e.message)) return e.message;
    if (UNAVAILABLE_PG_MESSAGES.some((m) => e.message === m || e.message.startsWith(`${m}\n`)))
      return e.message;
  }
  return undefined;
}

/**
 * The domain meaning of anything a request failed with: a DomainError as is, a database that cannot
 * serve us as ServiceUnavailableError, anything else undefined (a bug). Both transports' mappers start
 * here, so an infrastructure failure is classified once and answered alike.
 */
export function asDomainError(error: unknown): DomainError | undefined {
  if (error instanceof DomainError) return error;
  const reason = databaseUnavailableReason(error);
  return reason === undefined ? undefined : new ServiceUnavailableError(reason);
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
    case 'service_unavailable':
      return 503;
    default:
      return assertUnreachable(code);
  }
}
