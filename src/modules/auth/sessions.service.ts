import type { MikroORM } from '@mikro-orm/postgresql';
import { type ChangeFeed, FeedCache } from '../../core/change-feed.js';
import type { Clock } from '../../core/clock.js';
import { NotFoundError, UnauthorizedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type OrgRole, type Principal, requireSession } from '../../core/principal.js';
import { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } from '../../core/tokens.js';
import { parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { appIdSchema } from '../apps/apps.schemas.js';
import { Customer, type Metadata } from '../customers/customer.entity.js';
import type { Entitlements, EntitlementsService } from '../entitlements/entitlements.service.js';
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

/** The customer as a session shows it. */
export interface SessionCustomer {
  readonly id: string;
  readonly email: string;
  readonly name: string | null;
  readonly metadata: Metadata;
}

/** What a session token stands for: the interface's Session object, before presentation. */
export interface SessionView {
  readonly customer: SessionCustomer;
  readonly entitlements: Entitlements;
  readonly organizationId?: string;
  readonly orgRole?: OrgRole;
}

/**
 * Customer sessions: issuing `tg_st_…` tokens, describing and ending them. Resolving a token into a
 * Principal is CredentialsService's job; this service owns the rows.
 */
export class SessionsService {
  /**
   * Customers as sessions show them, so describing a session needs no query of its own (its credential
   * and entitlements are cached too). Exact across instances: a customer change drops it when it commits.
   */
  readonly #customers: FeedCache<SessionCustomer>;

  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly entitlements: EntitlementsService,
    private readonly changes: ChangeFeed,
  ) {
    this.#customers = new FeedCache(changes, (change) =>
      change.t === 'customer' ? [`customer:${change.id}`] : [],
    );
  }

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

  /**
   * The calling session of app `appId`: its customer and the entitlements of its context (the
   * organization's after a switch). An API key → 403; a session token of another app → 401.
   */
  async getSession(principal: Principal, appId: string): Promise<SessionView> {
    const id = parseInput(appIdSchema, appId);
    // A live session of this very app proves the app exists (deleting an app deletes its sessions).
    const ownApp = principal.kind === 'session' && principal.appId === id;
    if (!ownApp) await this.appOrFail(id);
    const session = requireSession(principal);
    if (session.appId !== id) throw new UnauthorizedError('The session token does not belong to this app');
    // One change-feed barrier for both cached lookups (customer, entitlements) of the request.
    const synced = await this.changes.synced();
    const customer = await this.#customers.get(
      session.customerId,
      () => this.loadCustomer(id, session.customerId),
      (c) => [`customer:${c.id}`],
      undefined,
      synced,
    );
    if (session.organizationId !== undefined) {
      return {
        customer,
        entitlements: await this.entitlements.resolve(
          { appId: id, organizationId: session.organizationId },
          synced,
        ),
        organizationId: session.organizationId,
        orgRole: session.orgRole,
      };
    }
    return {
      customer,
      entitlements: await this.entitlements.resolve({ appId: id, customerId: customer.id }, synced),
    };
  }

  private async loadCustomer(appId: string, customerId: string): Promise<SessionCustomer> {
    const customer = await this.orm.em.findOneOrFail(Customer, { id: customerId, app: appId });
    return Object.freeze({
      id: customer.id,
      email: customer.email,
      name: customer.name,
      metadata: Object.freeze({ ...customer.metadata }),
    });
  }

  /** Ends the calling session at once (logout); its token is refused from now on. */
  async revokeSession(principal: Principal): Promise<void> {
    const session = requireSession(principal);
    await this.orm.em.execute('update session set revoked_at = ? where id = ? and revoked_at is null', [
      this.clock.now(),
      session.sessionId,
    ]);
  }

  private async appOrFail(appId: string): Promise<App> {
    const app = await this.orm.em.findOne(App, { id: appId });
    if (!app) throw new NotFoundError('App', appId);
    return app;
  }
}
