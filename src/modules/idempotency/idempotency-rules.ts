import { createHash } from 'node:crypto';

/**
 * The rules of the `Idempotency-Key` header, as pure functions: which keys are well formed, what counts
 * as "the same request", which answers are kept, and which operations refuse the header. Both transports'
 * middleware (idempotency.middleware.ts) apply them; test/unit/idempotency-rules.test.ts checks them.
 */

/** How long a first answer is kept and replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** Printable ASCII, 1 to 255 characters (Stripe's bound; a UUID v4 is the usual choice). */
const KEY = /^[\x21-\x7e]{1,255}$/;

/** Why `key` cannot be used as an idempotency key, or null when it can. */
export function keyProblem(key: string): string | null {
  return KEY.test(key) ? null : 'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces';
}

/**
 * REST paths whose POST refuses the header: the public login endpoints, which carry no credential to
 * keep an answer under, and the answers that hand out a secret (a session token, an entitlement token, a
 * webhook signing secret), which must never be stored to be replayed.
 */
export const REFUSED_REST_PATHS: readonly RegExp[] = [
  /^\/v1\/apps\/[^/]+\/auth\/magic-link$/,
  /^\/v1\/apps\/[^/]+\/auth\/verify$/,
  /^\/v1\/apps\/[^/]+\/auth\/switch-organization$/,
  /^\/v1\/apps\/[^/]+\/auth\/entitlement-token$/,
  /^\/v1\/webhook-endpoints$/,
  /^\/v1\/webhook-endpoints\/[^/]+\/rotate-secret$/,
];

/**
 * GraphQL mutations that refuse the header: their answer carries a secret (an API key, a session token,
 * a webhook signing secret), or they are public (`requestMagicLink`).
 */
export const REFUSED_MUTATIONS: ReadonlySet<string> = new Set([
  'createApp',
  'createApiKey',
  'requestMagicLink',
  'verifyMagicLink',
  'switchOrganization',
  'createWebhookEndpoint',
  'rotateWebhookEndpointSecret',
]);

export function isRefusedRestPath(path: string): boolean {
  return REFUSED_REST_PATHS.some((pattern) => pattern.test(path));
}

/** A customer id as Tollgate makes them (src/core/ids.ts): `cus_` and 32 lowercase base32 characters. */
const CUSTOMER_ID = /\bcus_[a-z2-7]{32}\b/g;

/**
 * The customer ids a text names (a request's path and body, an answer), so a customer's deletion finds
 * every stored answer that concerns it, also one that shows its data without its id (a GraphQL
 * selection of `metadata` alone, say).
 */
export function customerIdsIn(...texts: string[]): string[] {
  return [...new Set(texts.flatMap((text) => text.match(CUSTOMER_ID) ?? []))].sort();
}

/** JSON with object keys sorted at every level, so two spellings of one body compare equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What identifies "the same request" for one key: method, path with query, and the body's content. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${body === undefined ? '' : canonicalJson(body)}`)
    .digest('hex');
}

/**
 * Whether an answer is kept for replay: successes and client errors are, since running the request again
 * would give the same answer; server errors (5xx) are not, so a retry after an outage runs again, and
 * neither is a GraphQL answer that reports one among its errors.
 */
export function isReplayable(status: number, body: string, graphql: boolean): boolean {
  if (status < 200 || status >= 500) return false;
  if (!graphql) return true;
  try {
    const parsed = JSON.parse(body) as { errors?: Array<{ extensions?: { statusCode?: unknown } }> };
    return !(parsed.errors ?? []).some((error) => Number(error.extensions?.statusCode ?? 500) >= 500);
  } catch {
    return false;
  }
}
