import { createHash } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Principal } from '../core/principal.js';
import { refuseGraphQL } from './apollo.js';
import { BoundedTextCache } from './text-cache.js';

/** Query text each app may keep persisted: a few hundred typical documents. */
export const PERSISTED_BYTES_PER_APP = 512 * 1024;
/** Apps whose persisted queries are kept at once (the least recently used app's go first). */
export const PERSISTED_APPS = 256;

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Automatic persisted queries (Apollo's protocol, version 1): a client sends
 * `extensions.persistedQuery.sha256Hash` alone; unknown → `PERSISTED_QUERY_NOT_FOUND`, and the client sends
 * the hash with the text, which is answered and then kept; the hash alone is then enough.
 *
 * Kept per app, each app within its own byte bound, so one tenant can neither flush another's queries nor
 * learn by probing which queries another sends. Callers without an app (anonymous) are told persisted
 * queries are not supported, which makes Apollo Client send the text. Apollo Server's own implementation
 * is not used: its cache sees only the hash (no request, so no app), and it resolves a hash after the
 * middleware in front of it, where the size and shape limits and the idempotency keys must already see the
 * text.
 */
export class PersistedQueryStore {
  readonly #apps = new Map<string, BoundedTextCache<string>>();

  constructor(
    private readonly bytesPerApp: number = PERSISTED_BYTES_PER_APP,
    private readonly maxApps: number = PERSISTED_APPS,
  ) {}

  get(scope: string, hash: string): string | undefined {
    const texts = this.#apps.get(scope);
    if (!texts) return undefined;
    // Most recently used last, so the app evicted first is the one idle the longest.
    this.#apps.delete(scope);
    this.#apps.set(scope, texts);
    return texts.get(hash);
  }

  set(scope: string, hash: string, query: string): void {
    let texts = this.#apps.get(scope);
    if (texts) {
      this.#apps.delete(scope);
    } else {
      texts = new BoundedTextCache<string>(this.bytesPerApp);
      for (const oldest of this.#apps.keys()) {
        if (this.#apps.size < this.maxApps) break;
        this.#apps.delete(oldest);
      }
    }
    this.#apps.set(scope, texts);
    texts.set(hash, query, hash.length + Buffer.byteLength(query, 'utf8'));
  }

  /** Bytes held for one app, for tests of the bound. */
  bytesOf(scope: string): number {
    return this.#apps.get(scope)?.bytes ?? 0;
  }
}

/** Whose persisted queries a caller sees: its app's, or none. */
function scopeOf(principal: Principal | undefined): string | undefined {
  switch (principal?.kind) {
    case 'apiKey':
    case 'session':
      return `app:${principal.appId}`;
    case 'admin':
      return 'admin';
    default:
      return undefined;
  }
}

/** A registration waiting for its answer: kept only once the text was answered without a request error. */
const pending = new WeakMap<Request, { scope: string; hash: string; query: string }>();

interface GraphQLParams {
  readonly query: unknown;
  readonly extensions: Record<string, unknown>;
  /** The request with `query` set to `text` and the `persistedQuery` extension taken out. */
  readonly rewrite: (text: string) => void;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function withoutPersistedQuery(extensions: Record<string, unknown>): Record<string, unknown> | undefined {
  const { persistedQuery: _, ...rest } = extensions;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/**
 * The request's query and extensions, when it has a `persistedQuery` extension Apollo would read; anything
 * malformed is left to Apollo, which answers it.
 */
function paramsOf(req: Request): GraphQLParams | undefined {
  if (req.method === 'POST') {
    const body: unknown = req.body;
    // A falsy `persistedQuery` is no extension to Apollo either.
    if (!isRecord(body) || !isRecord(body.extensions) || !body.extensions.persistedQuery) {
      return undefined;
    }
    const extensions = body.extensions;
    return {
      query: body.query,
      extensions,
      rewrite: (text) => {
        const { extensions: _, ...rest } = body;
        const kept = withoutPersistedQuery(extensions);
        // Apollo refuses an `extensions` key that is present but not an object.
        req.body = kept ? { ...rest, query: text, extensions: kept } : { ...rest, query: text };
      },
    };
  }
  if (req.method !== 'GET') return undefined;
  const question = req.url.indexOf('?');
  if (question < 0) return undefined;
  const search = new URLSearchParams(req.url.slice(question + 1));
  const texts = search.getAll('extensions');
  if (texts.length !== 1 || search.getAll('query').length > 1) return undefined;
  let extensions: unknown;
  try {
    extensions = JSON.parse(texts[0] as string);
  } catch {
    return undefined;
  }
  if (!isRecord(extensions) || !extensions.persistedQuery) return undefined;
  return {
    query: search.get('query') ?? undefined,
    extensions,
    rewrite: (text) => {
      search.set('query', text);
      const rest = withoutPersistedQuery(extensions);
      if (rest) search.set('extensions', JSON.stringify(rest));
      else search.delete('extensions');
      req.url = `${req.url.slice(0, question)}?${search}`;
    },
  };
}

/**
 * Resolves persisted queries in front of everything that reads the query text (see `PersistedQueryStore`):
 * a known hash becomes its text here, so the limits and the idempotency keys see exactly what a request
 * with the full text would show them, and Apollo sees a plain request.
 */
export function persistedQueries(store: PersistedQueryStore): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const params = paramsOf(req);
    if (!params) return next();
    const scope = scopeOf(req.principal);
    if (scope === undefined) {
      // Apollo's answer for a server without persisted queries: 200, so clients fall back to the text.
      return refuseGraphQL(res, 200, 'PERSISTED_QUERY_NOT_SUPPORTED', 'PersistedQueryNotSupported');
    }
    const persisted = params.extensions.persistedQuery;
    if (!isRecord(persisted) || persisted.version !== 1) {
      return refuseGraphQL(res, 400, 'BAD_REQUEST', 'Unsupported persisted query version');
    }
    const hash = persisted.sha256Hash;
    if (typeof hash !== 'string' || !SHA256_HEX.test(hash)) {
      return refuseGraphQL(res, 400, 'BAD_REQUEST', '`sha256Hash` must be a SHA-256 in lower-case hex');
    }
    if (params.query === undefined || params.query === null || params.query === '') {
      const text = store.get(scope, hash);
      // Apollo's answer to an unknown hash: 200, which Apollo Client answers by sending the text.
      if (text === undefined) {
        return refuseGraphQL(res, 200, 'PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound');
      }
      params.rewrite(text);
      return next();
    }
    if (typeof params.query !== 'string') return next(); // Apollo refuses it
    if (createHash('sha256').update(params.query).digest('hex') !== hash) {
      return refuseGraphQL(res, 400, 'BAD_REQUEST', 'provided sha does not match query');
    }
    pending.set(req, { scope, hash, query: params.query });
    params.rewrite(params.query);
    next();
  };
}

/**
 * Keeps a query sent with its hash once the GraphQL handler answered it with 200 (it parsed, validated and
 * passed the checks; errors in execution do not matter): the handler's `afterAnswer`.
 */
export function keepPersistedQuery(store: PersistedQueryStore) {
  return (req: Request, status: number): void => {
    const registration = pending.get(req);
    if (!registration || status !== 200) return;
    store.set(registration.scope, registration.hash, registration.query);
  };
}
