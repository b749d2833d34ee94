import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  parse,
  type SelectionNode,
} from 'graphql';
import { asDomainError, statusOf, ValidationError } from '../../core/errors.js';
import { withSubjectScope } from '../../core/subjects.js';
import { graphqlCodeOf } from '../../graphql/format-error.js';
import type { IdempotencyScope, IdempotencyService, StoredResponse } from './idempotency.service.js';
import {
  canonicalJson,
  customerIdsIn,
  isRefusedRestPath,
  isReplayable,
  keyProblem,
  REFUSED_MUTATIONS,
  requestFingerprint,
} from './idempotency-rules.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

type Transport = 'rest' | 'graphql';

/** How many times a header was sent (Node joins or drops repeats, depending on the header). */
function headerCount(req: Request, name: string): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === name) count++;
  return count;
}

interface GraphQLRequestShape {
  readonly operation: OperationDefinitionNode;
  readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
}

/** The operation of a GraphQL request body that the GraphQL handler would run, or undefined when there is none. */
function operationOf(body: unknown): GraphQLRequestShape | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const { query, operationName } = body as { query?: unknown; operationName?: unknown };
  if (typeof query !== 'string') return undefined;
  let document: DocumentNode;
  try {
    document = parse(query, { noLocation: true });
  } catch {
    return undefined; // the GraphQL handler answers the syntax error; nothing runs
  }
  const operations: OperationDefinitionNode[] = [];
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) operations.push(definition);
    else if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const operation =
    typeof operationName === 'string'
      ? operations.find((op) => op.name?.value === operationName)
      : operations.length === 1
        ? operations[0]
        : undefined;
  return operation ? { operation, fragments } : undefined;
}

/**
 * The names of the root fields an operation runs, through inline fragments and fragment spreads too
 * (`mutation { ... on Mutation { createApiKey … } }` runs createApiKey).
 */
function rootFieldNames(shape: GraphQLRequestShape): Set<string> {
  const names = new Set<string>();
  const seen = new Set<string>();
  const walk = (selections: readonly SelectionNode[]) => {
    for (const selection of selections) {
      if (selection.kind === Kind.FIELD) names.add(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet.selections);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = shape.fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet.selections);
      }
    }
  };
  walk(shape.operation.selectionSet.selections);
  return names;
}

/**
 * Whether this request takes part, and under which credential: null to pass it through untouched (no
 * header, not a POST, a GraphQL query), a scope to claim a key under, or an error refusing the header.
 */
function scopeOf(req: Request, transport: Transport): IdempotencyScope | null {
  if (req.method !== 'POST' || req.headers[IDEMPOTENCY_HEADER] === undefined) return null;
  if (transport === 'graphql') {
    const shape = operationOf(req.body);
    // Reads are safe to repeat; a document the GraphQL handler will refuse runs nothing.
    if (shape?.operation.operation !== 'mutation') return null;
    const refused = [...rootFieldNames(shape)].find((name) => REFUSED_MUTATIONS.has(name));
    if (refused) {
      throw new ValidationError(
        `Idempotency-Key is not accepted by ${refused}: its answer carries a secret, or it is public`,
      );
    }
  } else if (isRefusedRestPath(req.path === '/' ? req.baseUrl : `${req.baseUrl}${req.path}`)) {
    throw new ValidationError(
      'Idempotency-Key is not accepted here: this endpoint is public, or its answer carries a secret',
    );
  }
  if (headerCount(req, IDEMPOTENCY_HEADER) > 1)
    throw new ValidationError('Idempotency-Key must be sent at most once');
  const problem = keyProblem(String(req.headers[IDEMPOTENCY_HEADER]));
  if (problem) throw new ValidationError(problem);
  const principal = req.principal;
  if (principal.kind === 'apiKey') return { appId: principal.appId, credentialId: principal.apiKeyId };
  if (principal.kind === 'session') return { appId: principal.appId, credentialId: principal.sessionId };
  throw new ValidationError('Idempotency-Key needs an API key or a customer session token');
}

/** The stored answer as it was sent, marked as a replay. */
function replay(res: Response, response: StoredResponse): void {
  res.setHeader(REPLAYED_HEADER, 'true');
  if (response.contentType) res.setHeader('Content-Type', response.contentType);
  res.status(response.status).send(Buffer.from(response.body, 'utf8'));
}

/**
 * Holds the answer back until it is stored: the body written by the handler is collected and sent with
 * `end` once `store` has run, so a client that has its answer can count on a repeat being replayed.
 */
function captureAnswer(res: Response, store: (status: number, body: string) => Promise<void>): void {
  const chunks: Buffer[] = [];
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  const collect = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    chunks.push(
      Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
    );
  };
  res.write = ((chunk: unknown, encoding?: unknown) => {
    collect(chunk, encoding);
    return true;
  }) as Response['write'];
  res.end = ((chunk?: unknown, encoding?: unknown, callback?: () => void) => {
    collect(chunk, encoding);
    const body = Buffer.concat(chunks);
    const done =
      typeof callback === 'function' ? callback : typeof encoding === 'function' ? encoding : undefined;
    store(res.statusCode, body.toString('utf8')).finally(() => {
      res.write = write;
      res.end = end;
      if (body.length > 0) write(body);
      end(done as () => void);
    });
    return res;
  }) as Response['end'];
}

/** A refusal in the transport's own error shape (the REST envelope, or a GraphQL `errors` answer). */
function refuse(res: Response, next: NextFunction, transport: Transport, error: unknown): void {
  const domain = asDomainError(error);
  if (transport === 'rest' || !domain) {
    next(error);
    return;
  }
  const statusCode = statusOf(domain.code);
  res.setHeader('Cache-Control', 'no-store');
  res.status(statusCode).json({
    errors: [{ message: domain.message, extensions: { code: graphqlCodeOf(domain.code), statusCode } }],
  });
}

/**
 * The `Idempotency-Key` header on the POSTs of one transport (`/v1` or `/graphql`), over the one
 * IdempotencyService: the first answer per credential and key is stored and replayed for 24 hours.
 */
export function idempotencyMiddleware(service: IdempotencyService, transport: Transport): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    let scope: IdempotencyScope | null;
    try {
      scope = scopeOf(req, transport);
    } catch (error) {
      return refuse(res, next, transport, error);
    }
    if (!scope) return next();
    const key = String(req.headers[IDEMPOTENCY_HEADER]);
    const fingerprint = requestFingerprint(req.method, req.originalUrl, req.body);
    let claim: Awaited<ReturnType<IdempotencyService['claim']>>;
    try {
      const named = customerIdsIn(req.originalUrl, canonicalJson(req.body ?? null));
      claim = await service.claim(scope, key, fingerprint, named);
    } catch (error) {
      return refuse(res, next, transport, error);
    }
    if (claim.kind === 'replay') return replay(res, claim.response);
    // Every customer the request touches is noted here while it runs, and recorded with its answer.
    const touched = new Set<string>();
    captureAnswer(res, async (status, body) => {
      const contentType = res.getHeader('Content-Type');
      const keep = isReplayable(status, body, transport === 'graphql');
      await claim
        .finish(
          keep ? { status, body, contentType: contentType === undefined ? null : String(contentType) } : null,
          [...touched],
        )
        .catch((error: unknown) => req.log?.warn({ err: error }, 'idempotency record not stored'));
    });
    withSubjectScope(touched, () => service.runAsRecord(scope, key, next));
  };
}
