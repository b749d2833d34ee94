import {
  type DocumentStore as ApolloDocumentStore,
  ApolloServer,
  type ApolloServerPlugin,
  type BaseContext,
  type GraphQLRequestListener,
  HeaderMap,
} from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { Request, RequestHandler, Response } from 'express';
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import type { Logger } from '../infra/logger.js';
import { BoundedTextCache } from './text-cache.js';

/**
 * GraphQL over HTTP is Apollo Server 5's: its request forms (POST JSON, GET query parameters, GET for
 * queries only), its CSRF rule (a form-like request needs `apollo-require-preflight` or
 * `x-apollo-operation-name`), its codes and statuses, its document cache (here `documentStore`, bounded by
 * bytes), introspection off by configuration. Tollgate adds, around it:
 * - in front (Express middleware in src/app.ts, in this order): the persisted-query resolution
 *   (src/graphql/persisted-queries.ts), the document limits before parsing (`documentLimits`), the
 *   idempotency keys, the per-credential turns and the connection share;
 * - `validationRules` (the depth limit), run by Apollo after graphql-js's own;
 * - `checks` of the resolved operation before it runs (cost and resolver-call budgets, input values):
 *   a `GraphQLError` thrown by one is the answer, with HTTP 400;
 * - in the handler below: an `Accept` that takes no JSON is refused with 406 before anything runs (Apollo
 *   itself negotiates only after execution, so a refused mutation would already have run), and every
 *   answer is `Cache-Control: no-store`.
 *
 * The handler calls `executeHTTPGraphQLRequest` directly: the Express integration package would parse
 * every URL with Node's legacy `url.parse` and copy every header; only the headers Apollo reads are passed.
 */
export interface GraphQLServerOptions<TContext extends BaseContext> {
  readonly schema: GraphQLSchema;
  /** When false, `__schema` and `__type` are refused in validation. */
  readonly introspection: boolean;
  /** Run after graphql-js's own rules. */
  readonly validationRules: readonly ValidationRule[];
  /** Validation makes no "Did you mean …?" suggestions (see `createFormatError` for the rest). */
  readonly hideSuggestions: boolean;
  /** Maps every error of an answer; `error` is the error itself, `formatted` its JSON form with a `code`. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** Checks of a valid operation, before it runs: a `GraphQLError` thrown by one is the answer (400). */
  readonly checks?: ReadonlyArray<(operation: ResolvedOperation<TContext>) => void>;
  /** Where Apollo's own warnings go (it writes to the console otherwise). */
  readonly logger: Logger;
  /** Sees the errors of every answer that has any (before they are formatted), with the context. */
  readonly onErrors?: (errors: readonly GraphQLError[], context: TContext) => void;
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

/** Started, ready for `graphqlHandler`; the HTTP server's own close drains its requests (src/server.ts). */
export async function createGraphQLServer<TContext extends BaseContext>(
  options: GraphQLServerOptions<TContext>,
): Promise<ApolloServer<TContext>> {
  const server = new ApolloServer<TContext>({
    schema: options.schema,
    introspection: options.introspection,
    formatError: options.formatError,
    includeStacktraceInErrorResponses: false,
    // The process owns signal handling (src/cli.ts) and drains the HTTP server itself (src/server.ts).
    stopOnTerminationSignals: false,
    validationRules: [...options.validationRules],
    validationOptions: { hideSuggestions: options.hideSuggestions },
    // Resolved in front of Apollo, per app (src/graphql/persisted-queries.ts): Apollo never sees the extension.
    persistedQueries: false,
    documentStore: new DocumentStore(),
    logger: options.logger,
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      // Apollo's cache-control plugin wraps the resolution of every field only to conclude what is always
      // true here (no field declares a cache hint): the answer must not be stored. The handler says so.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ...(options.checks?.length || options.onErrors ? [tollgatePlugin(options)] : []),
    ],
  });
  await server.start();
  return server;
}

/**
 * One plugin, one listener shared by every request (Apollo awaits each hook of each listener): the checks
 * once the operation is resolved, and the error hook.
 */
function tollgatePlugin<TContext extends BaseContext>(
  options: GraphQLServerOptions<TContext>,
): ApolloServerPlugin<TContext> {
  const checks = options.checks ?? [];
  const { onErrors } = options;
  const listener: GraphQLRequestListener<TContext> = {};
  if (checks.length > 0) {
    listener.didResolveOperation = async ({ schema, document, operation, request, contextValue }) => {
      // No such operation: Apollo answers OPERATION_RESOLUTION_FAILURE; nothing will run.
      if (!operation) return;
      const resolved: ResolvedOperation<TContext> = {
        schema,
        document,
        operation,
        operationName: request.operationName ?? undefined,
        variables: request.variables,
        contextValue,
      };
      for (const check of checks) {
        try {
          check(resolved);
        } catch (error) {
          throw withStatus(error, 400);
        }
      }
    };
  }
  if (onErrors) {
    listener.didEncounterErrors = async ({ errors, contextValue }) => onErrors(errors, contextValue);
  }
  return {
    async requestDidStart() {
      return listener;
    },
  };
}

/** The error as a GraphQL error answered with HTTP `status` (unless it names a status of its own). */
function withStatus(error: unknown, status: number): GraphQLError {
  if (!(error instanceof GraphQLError)) {
    const cause = error instanceof Error ? error : new Error(String(error));
    return new GraphQLError(cause.message, { originalError: cause });
  }
  if (error.extensions.http) return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, http: { status } },
  });
}

/**
 * Apollo's cache of parsed and validated documents, keyed by the SHA-256 of the query text (Apollo hashes
 * every request's text to find it), bounded like the other caches by the bytes of text behind it.
 */
class DocumentStore implements ApolloDocumentStore {
  readonly #documents = new BoundedTextCache<DocumentNode>();

  async get(key: string): Promise<DocumentNode | undefined> {
    return this.#documents.get(key);
  }

  async set(key: string, document: DocumentNode): Promise<void> {
    this.#documents.set(key, document, key.length + (document.loc?.end ?? 0));
  }

  async delete(key: string): Promise<boolean> {
    return this.#documents.delete(key);
  }
}

const APPLICATION_JSON = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json; charset=utf-8';
/** The request headers Apollo reads: the CSRF rule's, the GET content-type check's and `Accept`. */
const PASSED_HEADERS = ['content-type', 'apollo-require-preflight', 'x-apollo-operation-name'] as const;

/**
 * Answers, in GraphQL's shape, a request refused before Apollo sees it (here and in the middleware in
 * front): HTTP `status` and `extensions.statusCode` agree.
 */
export function refuseGraphQL(
  res: Response,
  status: number,
  code: string,
  message: string,
  contentType: string = APPLICATION_JSON,
): void {
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Cache-Control', 'no-store');
  res.end(`${JSON.stringify({ errors: [{ message, extensions: { code, statusCode: status } }] })}\n`);
}

/** `/graphql` on Express, through Apollo (see the module's comment). */
export function graphqlHandler<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  context: (req: Request, res: Response) => TContext,
  afterAnswer?: (req: Request, status: number) => void,
): RequestHandler {
  server.assertStarted('graphqlHandler()');
  const contentTypes = new BoundedTextCache<string | null>(64 * 1024);

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

  return async (req, res) => {
    const contentType = contentTypeFor(req);
    if (contentType === null) {
      return refuseGraphQL(
        res,
        406,
        'BAD_REQUEST',
        `An 'accept' header was provided for this request which does not accept ${APPLICATION_JSON} or ${GRAPHQL_RESPONSE_JSON}`,
      );
    }
    const headers = new HeaderMap();
    for (const name of PASSED_HEADERS) {
      const value = req.headers[name];
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    // The choice made above, in a form Apollo's own negotiation (after execution) settles at once.
    if (contentType === GRAPHQL_RESPONSE_JSON) headers.set('accept', GRAPHQL_RESPONSE_JSON);
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: {
        method: req.method.toUpperCase(),
        headers,
        search: searchOf(req.url),
        body: req.body,
      },
      context: () => Promise.resolve(context(req, res)),
    });
    for (const [name, value] of response.headers) res.setHeader(name, value);
    const status = response.status ?? 200;
    res.statusCode = status;
    res.setHeader('Cache-Control', 'no-store');
    afterAnswer?.(req, status);
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  };
}

/** The URL's query string with its `?` (empty without one), up to a fragment, as `url.parse(url).search`. */
function searchOf(url: string): string {
  const hash = url.indexOf('#');
  const end = hash < 0 ? url.length : hash;
  const question = url.indexOf('?');
  return question < 0 || question > end ? '' : url.slice(question, end);
}
