import type { GraphQLResolveInfo } from 'graphql';
import { getGraphQLRateLimiter } from 'graphql-rate-limit';
import type { Config } from '../../config.js';
import { RateLimitedError } from '../../core/errors.js';
import type { Principal } from '../../core/principal.js';
import type { RateLimitRule, RateLimitStore } from './rate-limit-store.js';

/** Every per-request budget is a fixed 60-second window. */
export const WINDOW_SECONDS = 60;

/** Whose budget a request spends: a rule and the key it is counted under. */
export interface RateLimitSubject {
  readonly rule: RateLimitRule;
  readonly key: string;
}

/** What the `X-RateLimit-*` headers report for one request. */
export interface RequestAllowance {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Unix time in seconds at which the window ends. */
  readonly resetAt: number;
  /** Whole seconds until a refused caller may try again (at least 1). */
  readonly retryAfterSeconds: number;
}

/** A per-field GraphQL budget, on top of the per-request one. */
export interface FieldLimit {
  readonly max: number;
  /** A duration understood by `ms`, e.g. `'1m'`. */
  readonly window: string;
  /** Argument paths that make separate budgets, e.g. `['input.email']`. */
  readonly identityArgs?: readonly string[];
}

/**
 * The public customer-login endpoints, always counted per client IP whatever credential is sent. The
 * raw path is matched exactly as the routers route it: they are case-sensitive and strict
 * (src/rest/router.ts), so any other spelling of these paths reaches no handler (404).
 */
const PUBLIC_AUTH_PATH = /^\/v1\/apps\/[^/]+\/auth\/(?:magic-link|verify)$/;

/**
 * Request budgets (per API key, per session token, per client IP for public and unauthenticated
 * calls) and per-field GraphQL budgets, both counted in one RateLimitStore.
 */
export class RateLimitsService {
  readonly #rules: {
    readonly apiKey: RateLimitRule;
    readonly session: RateLimitRule;
    readonly ip: RateLimitRule;
  };
  readonly #fieldLimiter: ReturnType<typeof getGraphQLRateLimiter>;

  constructor(
    private readonly store: RateLimitStore,
    limits: Config['rateLimits'],
    /** Told of every refusal, by rule name (`field` for a GraphQL field budget), for the metrics. */
    private readonly onRejected: (rule: string) => void = () => undefined,
  ) {
    this.#rules = {
      apiKey: { name: 'api-key', points: limits.apiKey, windowSeconds: WINDOW_SECONDS },
      session: { name: 'session', points: limits.session, windowSeconds: WINDOW_SECONDS },
      ip: { name: 'ip', points: limits.publicIp, windowSeconds: WINDOW_SECONDS },
    };
    this.#fieldLimiter = getGraphQLRateLimiter({
      store: store.fieldStore,
      identifyContext: (context: { rateLimitSubject: string }) => context.rateLimitSubject,
      formatError: ({ fieldName, max, window }) =>
        `Rate limit exceeded for ${fieldName}: at most ${max} calls per ${Math.round(window / 1000)} seconds`,
    });
  }

  /**
   * Whose budget a request spends. The operator's admin token shares the API-key allowance under one
   * key; a request whose credential was rejected is counted per IP, so guessing keys is throttled too.
   */
  subjectOf(principal: Principal, clientIp: string, path: string): RateLimitSubject {
    if (PUBLIC_AUTH_PATH.test(path)) return { rule: this.#rules.ip, key: `ip:${clientIp}` };
    switch (principal.kind) {
      case 'apiKey':
        return { rule: this.#rules.apiKey, key: `key:${principal.apiKeyId}` };
      case 'session':
        return { rule: this.#rules.session, key: `session:${principal.sessionId}` };
      case 'admin':
        // Each operator has a budget of their own; the admin token shares one.
        return {
          rule: this.#rules.apiKey,
          key: principal.operator ? `operator:${principal.operator.id}` : 'admin',
        };
      case 'anonymous':
        return { rule: this.#rules.ip, key: `ip:${clientIp}` };
    }
  }

  /** Counts one HTTP request (REST or GraphQL alike) and reports the caller's remaining allowance. */
  async consumeRequest(subject: RateLimitSubject): Promise<RequestAllowance> {
    const outcome = await this.store.consume(subject.rule, subject.key);
    if (!outcome.allowed) this.onRejected(subject.rule.name);
    const now = Date.now();
    return {
      allowed: outcome.allowed,
      limit: outcome.limit,
      remaining: outcome.remaining,
      resetAt: Math.ceil((now + outcome.msBeforeReset) / 1000),
      retryAfterSeconds: Math.max(1, Math.ceil(outcome.msBeforeReset / 1000)),
    };
  }

  /** Counts one call of a rate-limited GraphQL field; throws RateLimitedError when over its budget. */
  async consumeField(
    call: {
      args: Record<string, unknown>;
      info: Pick<GraphQLResolveInfo, 'fieldName'>;
      rateLimitSubject: string;
    },
    limit: FieldLimit,
  ): Promise<void> {
    const refused = await this.#fieldLimiter(
      {
        parent: undefined,
        args: call.args,
        info: call.info as GraphQLResolveInfo,
        context: { rateLimitSubject: call.rateLimitSubject },
      },
      { max: limit.max, window: limit.window, identityArgs: limit.identityArgs },
    );
    if (refused !== undefined) {
      this.onRejected('field');
      throw new RateLimitedError(refused);
    }
  }
}
