import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { parse } from 'graphql';
import type { GraphQLBudget, GraphQLLimits } from '../config.js';
import { RateLimitedError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { measureDocument } from './hardening.js';
import { BoundedTextCache } from './text-cache.js';

/** Callers without a credential get the tightest budget: they are the cheapest to multiply. */
export function budgetOf(limits: GraphQLLimits, principal: Principal | undefined): GraphQLBudget {
  return !principal || principal.kind === 'anonymous' ? limits.anonymous : limits.authenticated;
}

/**
 * The document the GraphQL handler will read from the request: the body's `query`, or for GET the first
 * `query` parameter of the URL (a repeated parameter must not slip past as an array).
 */
function documentOf(req: Request): string | undefined {
  if (req.method === 'GET') {
    const search = req.url.indexOf('?');
    return search < 0
      ? undefined
      : (new URLSearchParams(req.url.slice(search + 1)).get('query') ?? undefined);
  }
  const body: unknown = req.body;
  const query = body && typeof body === 'object' ? (body as { query?: unknown }).query : undefined;
  return typeof query === 'string' ? query : undefined;
}

type DocumentShape = ReturnType<typeof measureDocument>;

/**
 * The shapes of recently seen query texts (null: the text does not parse), so the documents a client
 * sends again and again are parsed once here, as the GraphQL handler's own document cache does for
 * execution. Bounded by the bytes of text it keeps (see `BoundedTextCache`).
 */
export class ShapeCache {
  readonly #shapes: BoundedTextCache<DocumentShape | null>;

  constructor(maxBytes?: number) {
    this.#shapes = new BoundedTextCache(maxBytes);
  }

  /** The bytes of query text held, for tests of the bound. */
  get bytes(): number {
    return this.#shapes.bytes;
  }

  shapeOf(query: string, bytes: number): DocumentShape | null {
    const known = this.#shapes.get(query);
    if (known !== undefined) return known;
    let shape: DocumentShape | null;
    try {
      shape = measureDocument(parse(query, { noLocation: true }));
    } catch {
      shape = null;
    }
    this.#shapes.set(query, shape, bytes);
    return shape;
  }
}

/** The answer GraphQL itself gives to a request it refuses before execution (src/graphql/apollo.ts). */
function refuse(res: Response, code: string, message: string): void {
  res.setHeader('Cache-Control', 'no-store');
  res.status(400).json({ errors: [{ message, extensions: { code, statusCode: 400 } }] });
}

/**
 * Refuses, in front of the GraphQL handler, documents too big to be worth parsing or validating: first by their size in
 * bytes (before parsing), then by the aliases, fragment spreads and fields they spell out (one pass over
 * the parsed document that never follows a spread). GraphQL's own validation (e.g. the rule that checks
 * overlapping fields, quadratic in same-named fields) and the depth and cost walks only ever see
 * documents within these bounds. A document that does not parse is left to the handler, which reports why.
 */
export function documentLimits(limits: GraphQLLimits): RequestHandler {
  const shapes = new ShapeCache();
  return (req: Request, res: Response, next: NextFunction) => {
    const query = documentOf(req);
    if (query === undefined) return next();
    const budget = budgetOf(limits, req.principal);
    const bytes = Buffer.byteLength(query, 'utf8');
    if (bytes > budget.maxDocumentBytes) {
      return refuse(
        res,
        'QUERY_TOO_LARGE',
        `Query is too large: ${bytes} bytes exceed the maximum of ${budget.maxDocumentBytes}`,
      );
    }
    const shape = shapes.shapeOf(query, bytes);
    if (!shape) return next();
    if (shape.aliases > budget.maxAliases) {
      return refuse(
        res,
        'QUERY_TOO_MANY_ALIASES',
        `Query has too many aliases: ${shape.aliases} exceed the maximum of ${budget.maxAliases}`,
      );
    }
    if (shape.fragmentSpreads > budget.maxFragmentSpreads) {
      return refuse(
        res,
        'QUERY_TOO_MANY_FRAGMENT_SPREADS',
        `Query has too many fragment spreads: ${shape.fragmentSpreads} exceed the maximum of ${budget.maxFragmentSpreads}`,
      );
    }
    if (shape.fields > budget.maxFields) {
      return refuse(
        res,
        'QUERY_TOO_MANY_FIELDS',
        `Query has too many fields: ${shape.fields} exceed the maximum of ${budget.maxFields}`,
      );
    }
    next();
  };
}

/** A counting semaphore with a FIFO queue of bounded length, whose waiters give up after a deadline. */
export class Turns {
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(
    private readonly max: number,
    private readonly maxQueued: number = Number.POSITIVE_INFINITY,
  ) {}

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  /** Resolves to true once a turn is taken, false when the queue is full or `timeoutMs` passes first. */
  take(timeoutMs: number = Number.POSITIVE_INFINITY): Promise<boolean> {
    if (this.#running < this.max) {
      this.#running++;
      return Promise.resolve(true);
    }
    if (this.#waiting.length >= this.maxQueued) return Promise.resolve(false);
    return new Promise((resolve) => {
      const granted = () => {
        if (timer) clearTimeout(timer);
        resolve(true);
      };
      const timer = Number.isFinite(timeoutMs)
        ? setTimeout(() => {
            const index = this.#waiting.indexOf(granted);
            if (index >= 0) this.#waiting.splice(index, 1);
            resolve(false);
          }, timeoutMs)
        : undefined;
      this.#waiting.push(granted);
    });
  }

  /** Hands the turn to the longest waiter, if any. */
  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#running--;
  }
}

/**
 * Lets each credential (each IP without one) run at most `maxConcurrentPerCredential` GraphQL requests
 * at once. Extra requests wait in line, briefly (`queueTimeoutMs`), because a waiting request costs
 * nothing while an instant refusal invites an immediate retry; past the deadline, or with the line full,
 * the answer is 429 with `Retry-After`, in the envelope the rate limit uses on `/graphql`. The turn is
 * given back when execution ends, not when the client hangs up: resolvers still running hold it.
 */
export function concurrencyLimit(limits: GraphQLLimits, handler: RequestHandler): RequestHandler {
  const turnsBySubject = new Map<string, Turns>();
  return async (req: Request, res: Response, next: NextFunction) => {
    const subject = req.rateLimitSubject ?? `ip:${req.ip ?? 'unknown'}`;
    let turns = turnsBySubject.get(subject);
    if (!turns) {
      turns = new Turns(limits.maxConcurrentPerCredential, limits.maxQueuedPerCredential);
      turnsBySubject.set(subject, turns);
    }
    if (!(await turns.take(limits.queueTimeoutMs))) {
      return next(
        new RateLimitedError(
          `Too many concurrent GraphQL requests: at most ${limits.maxConcurrentPerCredential} at a time per credential`,
          1,
        ),
      );
    }
    try {
      await handler(req, res, next);
    } finally {
      turns.give();
      // Idle subjects are forgotten, so the map holds only callers with requests in flight.
      if (turns.running === 0 && turns.queued === 0) turnsBySubject.delete(subject);
    }
  };
}
