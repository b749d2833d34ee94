import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { NotFoundError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } from '../../core/tokens.js';
import { App } from '../apps/app.entity.js';
import { Session } from './session.entity.js';

export interface IssueSessionInput {
  readonly appId: string;
  readonly customerId: string;
  /** Set when the session acts in an organization context (see switchOrganization). */
  readonly organizationId?: string;
}

export interface IssuedSession {
  /** The `tg_st_…` secret, given out once; only its SHA-256 is stored. */
  readonly token: string;
  readonly session: Session;
}

/**
 * Customer sessions: issuing `tg_st_…` tokens and ending them. Resolving a token into a Principal is
 * CredentialsService's job; this service owns the rows.
 */
export class SessionsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
  ) {}

  /**
   * Issues a session for a customer of an app (optionally in an organization context), valid for the
   * app's `sessionTtlSeconds`. Callers have already checked that the customer (and membership) exist.
   */
  async issue(input: IssueSessionInput): Promise<IssuedSession> {
    const em = this.orm.em;
    const app = await em.findOne(App, { id: input.appId });
    if (!app) throw new NotFoundError('App', input.appId);
    const token = randomSecret(SESSION_TOKEN_PREFIX);
    const now = this.clock.now();
    const session = em.create(Session, {
      id: newId('ses'),
      app,
      customer: input.customerId,
      organization: input.organizationId ?? null,
      tokenHash: hashSecret(token),
      createdAt: now,
      expiresAt: new Date(now.getTime() + app.sessionTtlSeconds * 1000),
    });
    await em.flush();
    return { token, session };
  }
}
