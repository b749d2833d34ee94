import type { Request, RequestHandler, Response } from 'express';
import {
  type DocumentNode,
  execute,
  type FieldNode,
  GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
  getOperationAST,
  type OperationDefinitionNode,
  parse,
  specifiedRules,
  type ValidationContext,
  type ValidationRule,
  validate,
} from 'graphql';
import { BoundedTextCache } from './text-cache.js';

/**
 * GraphQL over HTTP, on graphql-js directly: the transport Apollo Server gave us (until November 2026),
 * kept answer for answer, without its per-request pipeline. A cached `checkEntitlement` spent about a
 * quarter of its CPU time there (plugin hooks and their promises, a SHA-256 of the query text to find
 * the cached document, content negotiation up to three times, header copies; `bench/hot-paths.js`);
 * graphql-js does the parsing, validation and execution either way.
 *
 * What a client sees, as before:
 * - `POST` with a JSON object `{query, variables?, operationName?, extensions?}`, or `GET` with the same as
 *   query parameters (`variables` and `extensions` JSON-encoded; queries only: a mutation is 405 with
 *   `Allow: POST`). Any other method is 405 with `Allow: GET, POST`.
 * - CSRF prevention: a request whose content type is missing or one a plain HTML form can send
 *   (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`) must carry a non-empty
 *   `apollo-require-preflight` or `x-apollo-operation-name` header, so a browser sends it only after a
 *   CORS preflight.
 * - Errors before execution (transport `BAD_REQUEST`, `GRAPHQL_PARSE_FAILED`, `GRAPHQL_VALIDATION_FAILED`,
 *   `OPERATION_RESOLUTION_FAILURE`, variables that do not coerce: `BAD_USER_INPUT`, the checks below) are
 *   answered `400` (or the transport status) with `{errors}`; errors during execution with `200` beside
 *   `data`. Every error passes through `formatError`.
 * - `Content-Type: application/json; charset=utf-8`, or `application/graphql-response+json` when the
 *   client's `Accept` prefers it; an `Accept` that takes neither is `406`, before anything runs.
 * - Persisted queries (a `persistedQuery` extension) are not supported: `PERSISTED_QUERY_NOT_SUPPORTED`,
 *   which Apollo Client's persisted-query link answers by sending the query text.
 *
 * Each query text is parsed and validated once (a cache bounded by bytes of text), as Apollo did.
 */
export interface GraphQLHttpOptions<TContext> {
  readonly schema: GraphQLSchema;
  /** When false, `__schema` and `__type` are refused in validation. */
  readonly introspection: boolean;
  /** Run after graphql-js's own rules. */
  readonly validationRules: readonly ValidationRule[];
  /** Validation and variable coercion make no "Did you mean …?" suggestions (see `createFormatError`). */
  readonly hideSuggestions: boolean;
  /** Maps every error of an answer; `error` is the error itself, `formatted` its JSON form with a `code`. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  readonly context: (req: Request, res: Response) => TContext;
  /** Checks of a valid operation, before it runs: a `GraphQLError` thrown by one is the answer (400). */
  readonly checks?: ReadonlyArray<(operation: ResolvedOperation<TContext>) => void>;
  /** Sees the errors of every answer that has any, before they are formatted. */
  readonly onErrors?: (errors: readonly GraphQLError[], res: Response) => void;
}

/** A request's operation after validation, as the checks see it. */
export interface ResolvedOperation<TContext> {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  readonly operationName: string | undefined;
  readonly variables: Readonly<Record<string, unknown>> | undefined;
  readonly contextValue: TContext;
}

interface GraphQLParams {
  readonly query: string | undefined;
  readonly operationName: string | undefined;
  readonly variables: Record<string, unknown> | undefined;
  readonly extensions: Record<string, unknown> | undefined;
}

/** An answer decided before execution: its errors and HTTP status (and headers, for 405). */
class Refusal {
  constructor(
    readonly errors: readonly GraphQLError[],
    readonly status: number,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}

const APPLICATION_JSON = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json; charset=utf-8';
/** Content types a cross-site HTML form can send without a CORS preflight. */
const SIMPLE_CONTENT_TYPES = new Set([
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
]);
const PREFLIGHT_HEADERS = ['apollo-require-preflight', 'x-apollo-operation-name'] as const;
/** `type/subtype` of a media type, tokens only (RFC 9110). */
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/;

function badRequest(message: string, status = 400, headers: Record<string, string> = {}): Refusal {
  return new Refusal([new GraphQLError(message, { extensions: { code: 'BAD_REQUEST' } })], status, headers);
}

/** The documents of recently seen query texts: parsed and validated, or the errors that refused them. */
type Prepared = { readonly document: DocumentNode } | { readonly refusal: Refusal };

export function graphqlHttpHandler<TContext>(options: GraphQLHttpOptions<TContext>): RequestHandler {
  const { schema, formatError } = options;
  const rules = [
    ...specifiedRules,
    ...options.validationRules,
    ...(options.introspection ? [] : [noIntrospection]),
  ];
  const prepared = new BoundedTextCache<Prepared>();
  const contentTypes = new BoundedTextCache<string | null>(64 * 1024);

  function prepare(query: string): Prepared {
    const known = prepared.get(query);
    if (known) return known;
    let result: Prepared;
    try {
      const document = parse(query);
      const errors = validate(schema, document, rules, { hideSuggestions: options.hideSuggestions });
      result =
        errors.length === 0
          ? { document }
          : {
              refusal: new Refusal(
                errors.map((e) => withCode(e, 'GRAPHQL_VALIDATION_FAILED')),
                400,
              ),
            };
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      result = { refusal: new Refusal([withCode(error, 'GRAPHQL_PARSE_FAILED')], 400) };
    }
    prepared.set(query, result);
    return result;
  }

  /** The answer's content type for an `Accept` header, null when it takes none of ours (remembered). */
  function contentTypeFor(req: Request): string | null {
    const accept = req.headers.accept;
    if (!accept) return APPLICATION_JSON;
    let chosen = contentTypes.get(accept);
    if (chosen === undefined) {
      chosen = req.accepts([APPLICATION_JSON, GRAPHQL_RESPONSE_JSON]) || null;
      contentTypes.set(accept, chosen);
    }
    return chosen;
  }

  async function run(req: Request, res: Response): Promise<{ status: number; body: Answer }> {
    preventCsrf(req);
    const params = paramsOf(req);
    if (params.extensions?.persistedQuery !== undefined) {
      throw new Refusal(
        [
          new GraphQLError('PersistedQueryNotSupported', {
            extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' },
          }),
        ],
        400,
      );
    }
    if (!params.query) {
      throw badRequest(
        'GraphQL operations must contain a non-empty `query` or a `persistedQuery` extension.',
      );
    }
    const ready = prepare(params.query);
    if ('refusal' in ready) throw ready.refusal;
    const { document } = ready;
    const operation = getOperationAST(document, params.operationName);
    if (!operation) {
      const message = params.operationName
        ? `Unknown operation named "${params.operationName}".`
        : 'Must provide operation name if query contains multiple operations.';
      throw new Refusal(
        [new GraphQLError(message, { extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } })],
        400,
      );
    }
    if (req.method === 'GET' && operation.operation !== 'query') {
      throw badRequest(
        `GET requests only support query operations, not ${operation.operation} operations`,
        405,
        {
          Allow: 'POST',
        },
      );
    }
    const contextValue = options.context(req, res);
    const resolved: ResolvedOperation<TContext> = {
      schema,
      document,
      operation,
      operationName: params.operationName,
      variables: params.variables,
      contextValue,
    };
    for (const check of options.checks ?? []) {
      try {
        check(resolved);
      } catch (error) {
        throw new Refusal([asGraphQLError(error)], 400);
      }
    }
    const result = await execute({
      schema,
      document,
      operationName: params.operationName,
      variableValues: params.variables,
      contextValue,
      hideSuggestions: options.hideSuggestions,
    });
    if (result.data === undefined) {
      // No data: the variables did not coerce (the operation itself was resolved above).
      throw new Refusal(result.errors?.map((e) => withCode(e, 'BAD_USER_INPUT', true)) ?? [], 400);
    }
    return { status: 200, body: { errors: result.errors, data: result.data, extensions: result.extensions } };
  }

  function formatted(
    errors: readonly GraphQLError[] | undefined,
    res: Response,
  ): GraphQLFormattedError[] | undefined {
    if (!errors?.length) return undefined;
    options.onErrors?.(errors, res);
    return errors.map((error) => {
      const json = error.toJSON();
      return formatError(
        {
          ...json,
          extensions: { ...json.extensions, code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR' },
        },
        error,
      );
    });
  }

  return async (req, res) => {
    const contentType = contentTypeFor(req);
    let status: number;
    let body: Answer;
    let headers: Readonly<Record<string, string>> = {};
    if (contentType === null) {
      const refusal = badRequest(
        `An 'accept' header was provided for this request which does not accept ${APPLICATION_JSON} or ${GRAPHQL_RESPONSE_JSON}`,
        406,
      );
      ({ status, headers } = refusal);
      body = { errors: refusal.errors };
    } else {
      try {
        ({ status, body } = await run(req, res));
      } catch (error) {
        if (error instanceof Refusal) {
          ({ status, headers } = error);
          body = { errors: error.errors };
        } else {
          // A bug: answered in GraphQL's shape, with what `formatError` makes of it (it logs it).
          status = 500;
          body = { errors: [asGraphQLError(error)] };
        }
      }
    }
    const answer = { errors: formatted(body.errors, res), data: body.data, extensions: body.extensions };
    res.statusCode = status;
    res.setHeader('Content-Type', contentType ?? APPLICATION_JSON);
    res.setHeader('Cache-Control', 'no-store');
    for (const name in headers) res.setHeader(name, headers[name] as string);
    res.end(`${JSON.stringify(answer)}\n`);
  };
}

interface Answer {
  readonly errors?: readonly GraphQLError[] | undefined;
  readonly data?: unknown;
  readonly extensions?: unknown;
}

/** The same error with `extensions.code` set to `code`: always, or (`keep`) only where it has none. */
function withCode(error: GraphQLError, code: string, keep = false): GraphQLError {
  if (keep && error.extensions.code !== undefined) return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

function asGraphQLError(error: unknown): GraphQLError {
  if (error instanceof GraphQLError) return error;
  const cause = error instanceof Error ? error : new Error(String(error));
  return new GraphQLError(cause.message, { originalError: cause });
}

/** The request's media type without parameters, lower-cased (`type/subtype`), or undefined without one. */
function contentTypeEssence(req: Request): string | undefined {
  return req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
}

/** Refuses requests a cross-site form could send without a preflight (see the module's comment). */
function preventCsrf(req: Request): void {
  const essence = contentTypeEssence(req);
  if (essence !== undefined) {
    // A content type a browser would not send in a form is fine; so is one it cannot send at all.
    if (!MEDIA_TYPE.test(essence) || !SIMPLE_CONTENT_TYPES.has(essence)) return;
  }
  for (const name of PREFLIGHT_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string' && value.length > 0) return;
  }
  throw badRequest(
    'This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Please either ' +
      `specify a 'content-type' header (with a type that is not one of ${[...SIMPLE_CONTENT_TYPES].join(', ')}) ` +
      `or provide a non-empty value for one of the following headers: ${PREFLIGHT_HEADERS.join(', ')}`,
  );
}

/** The request's GraphQL parameters, from a POST's JSON body or a GET's query string. */
function paramsOf(req: Request): GraphQLParams {
  if (req.method === 'POST') return postParams(req.body);
  if (req.method === 'GET') return getParams(req);
  throw badRequest('GraphQL is served over GET and POST only.', 405, { Allow: 'GET, POST' });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function postParams(body: unknown): GraphQLParams {
  if (!isRecord(body) || Object.keys(body).length === 0) {
    throw badRequest('POST body missing, invalid Content-Type, or JSON object has no keys.');
  }
  const { query, variables, operationName, extensions } = body;
  if (query !== undefined && query !== null && typeof query !== 'string') {
    throw badRequest('GraphQL queries must be strings.');
  }
  for (const [name, value] of [
    ['variables', variables],
    ['extensions', extensions],
  ] as const) {
    if (typeof value === 'string') {
      throw badRequest(
        `\`${name}\` in a POST body should be provided as an object, not a recursively JSON-encoded string.`,
      );
    }
    if (value !== undefined && value !== null && !isRecord(value)) {
      throw badRequest(`\`${name}\` in a POST body must be an object if provided.`);
    }
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    throw badRequest('`operationName` in a POST body must be a string if provided.');
  }
  return {
    query: typeof query === 'string' ? query : undefined,
    operationName: typeof operationName === 'string' ? operationName : undefined,
    variables: isRecord(variables) ? variables : undefined,
    extensions: isRecord(extensions) ? extensions : undefined,
  };
}

function getParams(req: Request): GraphQLParams {
  const essence = contentTypeEssence(req);
  if (essence !== undefined && essence !== 'application/json') {
    throw badRequest('GET requests may not have a content-type header other than application/json.', 415);
  }
  const question = req.url.indexOf('?');
  const search = new URLSearchParams(question < 0 ? '' : req.url.slice(question + 1));
  const once = (name: string): string | undefined => {
    const values = search.getAll(name);
    if (values.length > 1) throw badRequest(`The '${name}' search parameter may only be specified once.`);
    return values[0];
  };
  const json = (name: string): Record<string, unknown> | undefined => {
    const text = once(name);
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw badRequest(`The ${name} search parameter contains invalid JSON.`);
    }
    if (!isRecord(value))
      throw badRequest(`The ${name} search parameter should contain a JSON-encoded object.`);
    return value;
  };
  return {
    query: once('query'),
    operationName: once('operationName'),
    variables: json('variables'),
    extensions: json('extensions'),
  };
}

/** Refuses introspection fields when introspection is off. */
function noIntrospection(context: ValidationContext) {
  return {
    Field(node: FieldNode) {
      if (node.name.value === '__schema' || node.name.value === '__type') {
        context.reportError(
          new GraphQLError(
            'GraphQL introspection is not allowed here, but the query contained __schema or __type.',
            { nodes: [node] },
          ),
        );
      }
    },
  };
}

/**
 * The error a resolver threw, when GraphQL wrapped it (it then carries the field's path); any other
 * error as it is.
 */
export function unwrapResolverError(error: unknown): unknown {
  return error instanceof GraphQLError && error.path && error.originalError ? error.originalError : error;
}
