import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { asDomainError, assertUnreachable, type ErrorCode, statusOf } from '../core/errors.js';
import type { Logger } from '../infra/logger.js';

/** GraphQL `extensions.code` of each domain error code (exhaustive: a new code must be mapped here). */
export function graphqlCodeOf(code: ErrorCode): string {
  switch (code) {
    case 'validation_failed':
      return 'BAD_USER_INPUT';
    case 'unauthorized':
      return 'UNAUTHENTICATED';
    case 'forbidden':
      return 'FORBIDDEN';
    case 'not_found':
      return 'NOT_FOUND';
    case 'conflict':
      return 'CONFLICT';
    case 'payload_too_large':
      return 'PAYLOAD_TOO_LARGE';
    case 'rate_limited':
      return 'RATE_LIMITED';
    case 'provider_error':
      return 'BAD_GATEWAY';
    case 'provider_unavailable':
    case 'service_unavailable':
      return 'SERVICE_UNAVAILABLE';
    default:
      return assertUnreachable(code);
  }
}

/** Apollo's codes for requests that never reached a resolver (and the persisted-query ones, src/graphql/persisted-queries.ts). */
const CLIENT_ERROR_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
  'BAD_REQUEST',
  // Tollgate's own limits (src/graphql/hardening.ts).
  'QUERY_TOO_DEEP',
  'QUERY_TOO_COMPLEX',
  'QUERY_TOO_EXPENSIVE',
  // A viewer's mutation, refused before it runs (src/graphql/operator-roles.ts).
  'FORBIDDEN',
]);

/** graphql-js's "Did you mean …?" hints, which name fields, arguments, types and enum values. */
const SUGGESTION = / ?Did you mean [^?]*\?/g;

export interface FormatErrorOptions {
  /**
   * Drop suggestions from client error messages: with introspection off, they would give the schema
   * away one guess at a time. Validation and variable coercion are also told to make none
   * (`hideSuggestions`); this is the second line of defence, for any message that still carries one.
   */
  readonly hideSuggestions?: boolean;
}

/**
 * The single GraphQL error mapper: domain errors (database outages included, see `asDomainError`) keep
 * their message and get `{code, statusCode}`, plus `fields` when the error names input fields; GraphQL's
 * own request errors are 400; anything else is a bug, logged and answered without detail. An outage is
 * not logged here: the request's access-log line reports it (src/app.ts), once.
 */
export function createFormatError(log: Logger, options: FormatErrorOptions = {}) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    const domain = asDomainError(original);
    if (domain) {
      return {
        message: domain.message,
        locations: formatted.locations,
        path: formatted.path,
        extensions: {
          code: graphqlCodeOf(domain.code),
          statusCode: statusOf(domain.code),
          // The dashboard shows a validation error beside each field it names.
          ...(domain.details.fields?.length ? { fields: domain.details.fields } : {}),
        },
      };
    }
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && CLIENT_ERROR_CODES.has(code)) {
      return {
        message: options.hideSuggestions ? formatted.message.replace(SUGGESTION, '') : formatted.message,
        locations: formatted.locations,
        path: formatted.path,
        extensions: { code, statusCode: httpStatusOf(error) ?? 400 },
      };
    }
    log.error({ err: original }, 'unhandled GraphQL error');
    // Before execution (a failed context, a plugin's bug) Apollo answers these with 500 too; a resolver's
    // bug is one error beside the data, in a 200.
    return {
      message: 'Internal server error',
      path: formatted.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR', statusCode: 500 },
    };
  };
}

/**
 * The HTTP status Apollo answers a request error with (`extensions.http.status`: 405 for a GET mutation,
 * 415 for a GET with a content type, …), so `statusCode` says the same as the response.
 */
function httpStatusOf(error: unknown): number | undefined {
  if (!(error instanceof GraphQLError)) return undefined;
  const http = error.extensions.http as { status?: unknown } | undefined;
  return typeof http?.status === 'number' ? http.status : undefined;
}
