import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { UnauthorizedError } from '../../core/errors.js';
import { ANONYMOUS, type OrgRole, type Principal } from '../../core/principal.js';
import { API_KEY_PREFIX, hashSecret, SESSION_TOKEN_PREFIX, secretsEqual } from '../../core/tokens.js';

const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * Turns the `Authorization: Bearer …` header into a Principal. One place for REST and GraphQL.
 * Secrets are looked up by their SHA-256 (never compared as plaintext); the admin token is compared in
 * constant time. Missing header → anonymous; present but unknown, expired or revoked → 401.
 */
export class CredentialsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly adminToken: string,
  ) {}

  async resolve(authorization: string | undefined): Promise<Principal> {
    if (authorization === undefined || authorization === '') return ANONYMOUS;
    const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(authorization);
    if (!match) throw new UnauthorizedError('Authorization header must be "Bearer <token>"');
    const token = match[1]!;
    if (token.startsWith(API_KEY_PREFIX)) return this.resolveApiKey(token);
    if (token.startsWith(SESSION_TOKEN_PREFIX)) return this.resolveSession(token);
    if (secretsEqual(token, this.adminToken)) return { kind: 'admin' };
    throw new UnauthorizedError('Invalid credentials');
  }

  private get connection() {
    return this.orm.em.getConnection();
  }

  private async resolveApiKey(token: string): Promise<Principal> {
    const rows = await this.connection.execute<{ id: string; app_id: string; last_used_at: Date | null }[]>(
      'select id, app_id, last_used_at from api_key where key_hash = ? and revoked_at is null',
      [hashSecret(token)],
    );
    const row = rows[0];
    if (!row) throw new UnauthorizedError('Invalid or revoked API key');
    this.touchApiKey(row.id, row.last_used_at);
    return { kind: 'apiKey', appId: row.app_id, apiKeyId: row.id };
  }

  /** Records use at most once a minute per key, off the request path. */
  private touchApiKey(id: string, lastUsedAt: Date | null): void {
    const now = this.clock.now();
    if (lastUsedAt && now.getTime() - new Date(lastUsedAt).getTime() < LAST_USED_GRANULARITY_MS) return;
    this.connection
      .execute('update api_key set last_used_at = ? where id = ?', [now, id])
      .catch(() => undefined);
  }

  private async resolveSession(token: string): Promise<Principal> {
    // An organization session is only valid while its membership exists: removal ends it at once.
    const rows = await this.connection.execute<
      {
        id: string;
        app_id: string;
        customer_id: string;
        organization_id: string | null;
        role: OrgRole | null;
      }[]
    >(
      `select s.id, s.app_id, s.customer_id, s.organization_id, m.role
         from session s
         left join organization_member m
           on m.organization_id = s.organization_id and m.customer_id = s.customer_id
        where s.token_hash = ? and s.revoked_at is null and s.expires_at > ?`,
      [hashSecret(token), this.clock.now()],
    );
    const row = rows[0];
    if (!row) throw new UnauthorizedError('Invalid or expired session token');
    if (row.organization_id === null) {
      return { kind: 'session', appId: row.app_id, customerId: row.customer_id, sessionId: row.id };
    }
    if (row.role === null) throw new UnauthorizedError('The session no longer has access to this organization');
    return {
      kind: 'session',
      appId: row.app_id,
      customerId: row.customer_id,
      sessionId: row.id,
      organizationId: row.organization_id,
      orgRole: row.role,
    };
  }
}
