import { createRemoteJWKSet, customFetch, type JWTPayload, jwtVerify } from 'jose';

/** A feature's value as a token carries it (a metered feature's value is its limit). */
export type EntitlementValue = boolean | number | string;

/** The claims of an entitlement token (see the guide: docs/guides/entitlement-tokens.md). */
export interface EntitlementClaims extends JWTPayload {
  /** The customer id (with an API key in an organization context, the organization id). */
  readonly sub: string;
  readonly aud: string;
  readonly exp: number;
  readonly iat: number;
  readonly org?: string;
  readonly org_role?: 'owner' | 'admin' | 'member';
  readonly plan: { readonly id: string | null; readonly name: string } | null;
  readonly ent: Readonly<Record<string, EntitlementValue>>;
  /** The entitlement version: a larger one describes newer entitlements. */
  readonly ev: number;
}

/** A verified entitlement token: its claims and in-memory checks. */
export class VerifiedEntitlements {
  readonly claims: EntitlementClaims;
  readonly #ent: Readonly<Record<string, EntitlementValue>>;

  constructor(claims: EntitlementClaims) {
    this.claims = claims;
    this.#ent = claims.ent ?? {};
  }

  /** Whether the token grants `feature`: `true`, a number above 0 or a non-empty string (as the API's check). */
  has(feature: string): boolean {
    if (!Object.hasOwn(this.#ent, feature)) return false;
    const value = this.#ent[feature];
    return (
      value === true ||
      (typeof value === 'number' && value > 0) ||
      (typeof value === 'string' && value !== '')
    );
  }

  /** The feature's value, or null when the plan does not name it. */
  value(feature: string): EntitlementValue | null {
    return Object.hasOwn(this.#ent, feature) ? this.#ent[feature]! : null;
  }

  get ev(): number {
    return this.claims.ev;
  }

  get expiresAt(): Date {
    return new Date(this.claims.exp * 1000);
  }
}

/** Seconds of clock difference a verifier tolerates (`exp`, `iat`). */
export const CLOCK_TOLERANCE_SECONDS = 60;

export interface EntitlementVerifierOptions {
  /** Tollgate's URL as this client reaches it (the JWKS is fetched from it). */
  readonly baseUrl: string;
  readonly appId: string;
  /** When set, the `iss` claim must equal it (`{PUBLIC_BASE_URL}/v1/apps/{appId}`). */
  readonly issuer?: string;
  /** The fetch the JWKS is read with (default: the global one). */
  readonly fetch?: typeof fetch;
}

/**
 * Verifies entitlement tokens offline: the app's JWKS is fetched once and cached by `jose`'s remote key
 * set (refetched at most every 10 minutes, or when a token names a key it has not seen, at most every
 * 30 seconds). Refuses an expired token, another app's (`aud`), an unknown or revoked `kid` and any
 * change to the token.
 */
export function entitlementVerifier(
  options: EntitlementVerifierOptions,
): (token: string) => Promise<VerifiedEntitlements> {
  const base = options.baseUrl.replace(/\/+$/, '');
  let keys: ReturnType<typeof createRemoteJWKSet> | undefined;
  return async (token) => {
    keys ??= createRemoteJWKSet(
      new URL(`${base}/v1/apps/${encodeURIComponent(options.appId)}/.well-known/jwks.json`),
      options.fetch ? { [customFetch]: options.fetch } : {},
    );
    const { payload } = await jwtVerify(token, keys, {
      audience: options.appId,
      algorithms: ['ES256', 'EdDSA'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
    });
    return new VerifiedEntitlements(payload as EntitlementClaims);
  };
}
