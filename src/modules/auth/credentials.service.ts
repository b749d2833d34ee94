import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { UnauthorizedError } from '../../core/errors.js';
import {
  ANONYMOUS,
  type ApiKeyPrincipal,
  type OrgRole,
  type Principal,
  revokedApiKey,
} from '../../core/principal.js';
import { API_KEY_PREFIX, hashSecret, SESSION_TOKEN_PREFIX, secretsEqual } from '../../core/tokens.js';
import { CACHE_MAX_ENTRIES, type Change, type ChangeFeed, FeedCache } from '../../infra/change-feed.js';
import type { CacheObserver } from '../../telemetry/metrics.js';

/** How stale an API key's `lastUsedAt` may be: each instance writes it at most once per key in this time. */
const LAST_USED_GRANULARITY_MS = 60_000;

interface ApiKeyRow {
  readonly id: string;
  readonly app_id: string;
}

interface SessionRow {
  readonly id: string;
  readonly app_id: string;
  readonly customer_id: string;
  readonly organization_id: string | null;
  readonly role: OrgRole | null;
  readonly expires_at: Date;
}

/** Cached keys a change makes stale: a revoked or deleted key. */
function staleApiKeys(change: Change): string[] {
  return change.t === 'apiKey' ? [`apiKey:${change.id}`] : [];
}

/** Cached sessions a change makes stale: a revoked or deleted session, a changed or ended membership. */
function staleSessions(change: Change): string[] {
  if (change.t === 'session') return [`session:${change.id}`];
  if (change.t === 'member') return [`member:${change.organization}|${change.customer}`];
  return [];
}

/**
 * Turns the `Authorization: Bearer …` header into a Principal. One place for REST and GraphQL.
 * Secrets are looked up by their SHA-256 (never compared as plaintext); the admin token is compared in
 * constant time. Missing header → anonymous; present but unknown, expired or revoked → 401.
 */
export class CredentialsService {
  /**
   * Live sessions by token hash, so a request with a session token needs no query of its own. Exact
   * across instances: revocation and membership changes drop entries when they commit (ChangeFeed).
   */
  readonly #sessions: FeedCache<SessionRow | undefined>;
  /** Unrevoked API keys by hash, kept exact the same way (a revocation drops the key when it commits). */
  readonly #apiKeys: FeedCache<ApiKeyRow | undefined>;
  /** When this instance last wrote each key's `last_used_at` (ms), so a busy key costs one write a minute. */
  readonly #lastUseWritten = new Map<string, number>();

  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly adminToken: string,
    changes: ChangeFeed,
    observer?: CacheObserver,
  ) {
    this.#sessions = new FeedCache(changes, staleSessions, CACHE_MAX_ENTRIES, observer);
    this.#apiKeys = new FeedCache(changes, staleApiKeys);
  }

  /**
   * `keyConfirmedInStatement`: the request's path checks an API key in its own statement (see
   * `requireApiKeyConfirmedInStatement`), so a key this instance has cached is taken at once, marked
   * `unconfirmed`, without waiting for the change feed (its `confirm` waits for it, for a path that
   * answers from memory after all).
   */
  async resolve(
    authorization: string | undefined,
    { keyConfirmedInStatement = false }: { keyConfirmedInStatement?: boolean } = {},
  ): Promise<Principal> {
    if (authorization === undefined || authorization === '') return ANONYMOUS;
    const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(authorization);
    if (!match) throw new UnauthorizedError('Authorization header must be "Bearer <token>"');
    const token = match[1]!;
    if (token.startsWith(API_KEY_PREFIX)) return this.resolveApiKey(token, keyConfirmedInStatement);
    if (token.startsWith(SESSION_TOKEN_PREFIX)) return this.resolveSession(token);
    if (secretsEqual(token, this.adminToken)) return { kind: 'admin' };
    throw new UnauthorizedError('Invalid credentials');
  }

  private get connection() {
    return this.orm.em.getConnection();
  }

  private async resolveApiKey(token: string, confirmedInStatement: boolean): Promise<Principal> {
    const hash = hashSecret(token);
    const cached = confirmedInStatement ? this.#apiKeys.peek(hash) : undefined;
    if (cached) {
      this.touchApiKey(cached.id);
      const confirm = () => this.#apiKeyOf(hash);
      return { kind: 'apiKey', appId: cached.app_id, apiKeyId: cached.id, unconfirmed: { confirm } };
    }
    return this.#apiKeyOf(hash);
  }

  /** The key whose hash is `hash`, confirmed after the change feed's barrier; 401 when unknown or revoked. */
  async #apiKeyOf(hash: string): Promise<ApiKeyPrincipal> {
    const row = await this.#apiKeys.get(
      hash,
      () => this.loadApiKey(hash),
      (r) => [`apiKey:${r!.id}`],
      // An unknown or revoked key is asked again next time (it may be a key being created right now).
      (r) => r !== undefined,
    );
    if (!row) throw revokedApiKey();
    this.touchApiKey(row.id);
    return { kind: 'apiKey', appId: row.app_id, apiKeyId: row.id };
  }

  private async loadApiKey(hash: string): Promise<ApiKeyRow | undefined> {
    const rows = await this.connection.execute<ApiKeyRow[]>(
      'select id, app_id from api_key where key_hash = ? and revoked_at is null',
      [hash],
    );
    return rows[0];
  }

  /**
   * Records use off the request path, throttled: at most one write per key per minute on each instance,
   * and none when another instance wrote a newer time meanwhile. `lastUsedAt` is thus accurate to a minute.
   */
  private touchApiKey(id: string): void {
    const now = this.clock.now();
    const written = this.#lastUseWritten.get(id);
    if (written !== undefined && now.getTime() - written < LAST_USED_GRANULARITY_MS) return;
    // Bounded like the caches: forgetting only costs one early write per key.
    if (this.#lastUseWritten.size >= 10_000) this.#lastUseWritten.clear();
    this.#lastUseWritten.set(id, now.getTime());
    const before = new Date(now.getTime() - LAST_USED_GRANULARITY_MS);
    this.connection
      .execute(
        'update api_key set last_used_at = ? where id = ? and (last_used_at is null or last_used_at < ?)',
        [now, id, before],
      )
      .catch(() => undefined);
  }

  private async resolveSession(token: string): Promise<Principal> {
    const hash = hashSecret(token);
    const row = await this.#sessions.get(
      hash,
      () => this.loadSession(hash),
      (r) => [
        `session:${r!.id}`,
        ...(r!.organization_id ? [`member:${r!.organization_id}|${r!.customer_id}`] : []),
      ],
      // Only live rows are kept: an unknown token or an ended membership is asked again next time.
      (r) => r !== undefined && (r.organization_id === null || r.role !== null),
    );
    if (!row || new Date(row.expires_at) <= this.clock.now()) {
      throw new UnauthorizedError('Invalid or expired session token');
    }
    if (row.organization_id === null) {
      return { kind: 'session', appId: row.app_id, customerId: row.customer_id, sessionId: row.id };
    }
    if (row.role === null)
      throw new UnauthorizedError('The session no longer has access to this organization');
    return {
      kind: 'session',
      appId: row.app_id,
      customerId: row.customer_id,
      sessionId: row.id,
      organizationId: row.organization_id,
      orgRole: row.role,
    };
  }

  /** A session that is not revoked, with the caller's role when it acts in an organization. */
  private async loadSession(hash: string): Promise<SessionRow | undefined> {
    // An organization session is only valid while its membership exists: removal ends it at once.
    const rows = await this.connection.execute<SessionRow[]>(
      `select s.id, s.app_id, s.customer_id, s.organization_id, m.role, s.expires_at
         from session s
         left join organization_member m
           on m.organization_id = s.organization_id and m.customer_id = s.customer_id
        where s.token_hash = ? and s.revoked_at is null`,
      [hash],
    );
    return rows[0];
  }
}
