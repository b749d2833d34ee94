import { entitlementVerifier, type VerifiedEntitlements } from './entitlement-token.js';
import { configurationError } from './errors.js';
import { type RequestOptions, Transport, type TransportOptions } from './http.js';
import type {
  EntitlementCheck,
  FeatureBalanceList,
  PostOptions,
  RecordUsageRequest,
  Session,
  SuccessResult,
  SwitchOrganizationResult,
  UsageResult,
  VerifyResult,
} from './types.js';

export interface TollgateAuthOptions extends TransportOptions {
  /** The app whose customers log in. */
  readonly appId: string;
  /** Where magic links lead when no `redirectUrl` is passed and not in production. */
  readonly devCallbackUrl?: string;
  /** Seconds a `getSession` answer is reused for the same token; 0 (default) asks Tollgate every time. */
  readonly sessionCacheTTL?: number;
  /** Default: `NODE_ENV === 'production'` where `process.env` exists, else false. */
  readonly production?: boolean;
  /** At most this many sessions are cached (the oldest is dropped first). Default 1000. */
  readonly maxCachedSessions?: number;
  /** The clock of the session cache, in milliseconds (tests pass a controllable one). */
  readonly now?: () => number;
  /** When set, entitlement tokens' `iss` must equal it (`{PUBLIC_BASE_URL}/v1/apps/{appId}`). */
  readonly entitlementTokenIssuer?: string;
}

/** An entitlement token as issued: the compact JWT and when it expires. */
export interface EntitlementToken {
  readonly token: string;
  readonly expiresAt: string;
}

/** A cached token is fetched again this long before it expires. */
const TOKEN_REFRESH_MARGIN_MS = 10_000;

function nodeEnvIsProduction(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.NODE_ENV === 'production';
}

/**
 * Customer login by magic link, for browsers and servers alike: no API key, only the app id and, once
 * logged in, the customer's session token.
 */
export class TollgateAuth {
  readonly #transport: Transport;
  readonly #base: string;
  readonly #devCallbackUrl: string | undefined;
  readonly #production: boolean;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #sessions = new Map<string, { readonly session: Session; readonly expiresAt: number }>();
  readonly #verify: (token: string) => Promise<VerifiedEntitlements>;
  /** Per session token: its entitlement token, the version it carries, and the newest version seen. */
  readonly #tokens = new Map<
    string,
    {
      token?: Promise<{ issued: EntitlementToken; ev: number; expiresAt: number; basis: number }>;
      seen: number;
    }
  >();

  constructor(options: TollgateAuthOptions) {
    if (typeof options?.appId !== 'string' || options.appId === '')
      throw configurationError('appId is required');
    const ttl = options.sessionCacheTTL ?? 0;
    if (!Number.isFinite(ttl) || ttl < 0)
      throw configurationError('sessionCacheTTL must be a number of seconds ≥ 0');
    this.#transport = new Transport(options);
    this.#base = `/v1/apps/${encodeURIComponent(options.appId)}/auth`;
    this.#devCallbackUrl = options.devCallbackUrl;
    this.#production = options.production ?? nodeEnvIsProduction();
    this.#ttlMs = ttl * 1000;
    this.#maxEntries = Math.max(1, options.maxCachedSessions ?? 1000);
    this.#now = options.now ?? Date.now;
    this.#verify = entitlementVerifier({
      baseUrl: options.baseUrl,
      appId: options.appId,
      issuer: options.entitlementTokenIssuer,
      fetch: options.fetch,
    });
  }

  /**
   * The session's entitlement token, fetched once and reused until shortly before it expires or until
   * a newer entitlement version is seen (`noteEntitlementsVersion`, or a session lookup's
   * `Tollgate-Entitlements-Version` header).
   */
  async entitlementToken(sessionToken: string, options?: RequestOptions): Promise<EntitlementToken> {
    const entry = this.#tokenEntry(sessionToken);
    const current = entry.token && (await entry.token.catch(() => undefined));
    // Fresh: no newer version seen than the token's own or than those known when it was fetched.
    if (
      current &&
      entry.seen <= Math.max(current.ev, current.basis) &&
      current.expiresAt - TOKEN_REFRESH_MARGIN_MS > this.#now()
    )
      return current.issued;
    const basis = entry.seen;
    const fetching = this.#transport
      .request<EntitlementToken>(
        { method: 'POST', path: `${this.#base}/entitlement-token`, token: sessionToken },
        options,
      )
      .then((issued) => ({
        issued,
        ev: Number(payloadOf(issued.token).ev ?? 0),
        expiresAt: Date.parse(issued.expiresAt),
        basis,
      }));
    entry.token = fetching;
    while (this.#tokens.size > this.#maxEntries)
      this.#tokens.delete(this.#tokens.keys().next().value as string);
    return (await fetching).issued;
  }

  /** Verifies an entitlement token offline against the app's published keys (see `entitlementVerifier`). */
  verifyEntitlementToken(token: string): Promise<VerifiedEntitlements> {
    return this.#verify(token);
  }

  /**
   * Tells the client that the session's context has entitlement version `ev` (from an
   * `entitlements.updated` or `plan.updated` webhook): a cached token with an older one is fetched again
   * on the next `entitlementToken`. Without `sessionToken`, applies to every cached session.
   */
  noteEntitlementsVersion(ev: number, sessionToken?: string): void {
    if (sessionToken !== undefined) {
      const entry = this.#tokenEntry(sessionToken);
      entry.seen = Math.max(entry.seen, ev);
      return;
    }
    for (const entry of this.#tokens.values()) entry.seen = Math.max(entry.seen, ev);
  }

  #tokenEntry(sessionToken: string) {
    let entry = this.#tokens.get(sessionToken);
    if (!entry) {
      entry = { seen: 0 };
      this.#tokens.set(sessionToken, entry);
    }
    return entry;
  }

  #noteHeader(sessionToken: string, headers: Headers): void {
    const ev = Number(headers.get('tollgate-entitlements-version'));
    if (Number.isFinite(ev) && ev > 0) this.noteEntitlementsVersion(ev, sessionToken);
  }

  /**
   * E-mails a login link. It leads to `redirectUrl` when given; else, outside production, to
   * `devCallbackUrl`; else nothing is sent and a TollgateError says why.
   */
  async sendMagicLink(
    email: string,
    options: RequestOptions & { readonly redirectUrl?: string } = {},
  ): Promise<SuccessResult> {
    const { redirectUrl: asked, ...call } = options;
    const redirectUrl = asked ?? (this.#production ? undefined : this.#devCallbackUrl);
    if (redirectUrl === undefined) {
      throw configurationError(
        this.#production
          ? 'redirectUrl is required in production (devCallbackUrl is used only in development)'
          : 'redirectUrl is required when no devCallbackUrl is configured',
      );
    }
    return this.#transport.request<SuccessResult>(
      {
        method: 'POST',
        path: `${this.#base}/magic-link`,
        body: { email, redirectUrl },
      },
      call,
    );
  }

  /** Exchanges the `token` of the callback URL (once) for a session token, customer and entitlements. */
  verify(token: string, options?: RequestOptions): Promise<VerifyResult> {
    return this.#transport.request<VerifyResult>(
      { method: 'POST', path: `${this.#base}/verify`, body: { token } },
      options,
    );
  }

  /** The session of a token; served from the cache for `sessionCacheTTL` seconds when set. */
  async getSession(sessionToken: string, options?: RequestOptions): Promise<Session> {
    if (this.#ttlMs > 0) {
      const cached = this.#sessions.get(sessionToken);
      if (cached && cached.expiresAt > this.#now()) return cached.session;
      this.#sessions.delete(sessionToken);
    }
    const session = await this.#transport.request<Session>(
      {
        method: 'GET',
        path: `${this.#base}/session`,
        token: sessionToken,
        onHeaders: (headers) => this.#noteHeader(sessionToken, headers),
      },
      options,
    );
    if (this.#ttlMs > 0) {
      this.#sessions.set(sessionToken, { session, expiresAt: this.#now() + this.#ttlMs });
      while (this.#sessions.size > this.#maxEntries) {
        const oldest = this.#sessions.keys().next().value as string;
        this.#sessions.delete(oldest);
      }
    }
    return session;
  }

  /**
   * Whether the session's context (its organization after a switch) has `feature`; for a metered
   * feature, whether its balance holds `amount` (default 1).
   */
  check(
    sessionToken: string,
    feature: string,
    options: RequestOptions & { readonly amount?: number } = {},
  ): Promise<EntitlementCheck> {
    const { amount, ...call } = options;
    return this.#transport.request<EntitlementCheck>(
      {
        method: 'GET',
        path: `/v1/entitlements/check/${encodeURIComponent(feature)}`,
        query: { amount },
        token: sessionToken,
      },
      call,
    );
  }

  /**
   * Consumes `amount` (default 1) of a metered feature from the session's context, atomically:
   * `allowed: false` records nothing. Pass an `idempotencyKey` so a retried call consumes once.
   */
  recordUsage(
    sessionToken: string,
    body: Omit<RecordUsageRequest, 'customerId' | 'organizationId'>,
    options: PostOptions = {},
  ): Promise<UsageResult> {
    const { idempotencyKey, ...call } = options;
    return this.#transport.request<UsageResult>(
      { method: 'POST', path: '/v1/usage', body, token: sessionToken, idempotencyKey },
      call,
    );
  }

  /** The live balance of every metered feature of the session's context. */
  balances(sessionToken: string, options?: RequestOptions): Promise<FeatureBalanceList> {
    return this.#transport.request<FeatureBalanceList>(
      { method: 'GET', path: '/v1/balances', token: sessionToken },
      options,
    );
  }

  /** A new session token in an organization's context; the old token's cached session is dropped. */
  async switchOrganization(
    sessionToken: string,
    organizationId: string,
    options?: RequestOptions,
  ): Promise<SwitchOrganizationResult> {
    this.#sessions.delete(sessionToken);
    return this.#transport.request<SwitchOrganizationResult>(
      {
        method: 'POST',
        path: `${this.#base}/switch-organization`,
        body: { organizationId },
        token: sessionToken,
      },
      options,
    );
  }

  /** Ends the session: its token is refused from now on, and its cached session is dropped. */
  async signOut(sessionToken: string, options?: RequestOptions): Promise<SuccessResult> {
    this.#sessions.delete(sessionToken);
    this.#tokens.delete(sessionToken);
    return this.#transport.request<SuccessResult>(
      { method: 'POST', path: `${this.#base}/sign-out`, token: sessionToken },
      options,
    );
  }
}

/** The payload of a compact JWT, unverified (only to read the version of a token this client fetched). */
function payloadOf(token: string): { ev?: unknown } {
  const part = token.split('.')[1] ?? '';
  const base64 = part.replace(/-/g, '+').replace(/_/g, '/');
  try {
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))));
  } catch {
    return {};
  }
}
