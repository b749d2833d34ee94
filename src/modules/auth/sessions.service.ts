import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { UnauthorizedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type OrgRole, type Principal, requireSession } from '../../core/principal.js';
import { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } from '../../core/tokens.js';
import type { AppsService } from '../apps/apps.service.js';
import { Customer } from '../customers/customer.entity.js';
import type { Entitlements, EntitlementsService } from '../entitlements/entitlements.service.js';
import type { OrganizationsService } from '../organizations/organizations.service.js';
import { Session } from './session.entity.js';

export interface IssueSessionInput {
  readonly appId: string;
  readonly customerId: string;
  /** Set when the session acts in an organization context (see switchOrganization). */
  readonly organizationId?: string;
}

/** A session switched into an organization's context (see switchOrganization). */
export interface SwitchedSession {
  /** The new `tg_st_…` token, in the organization context. Given out once. */
  readonly sessionToken: string;
  readonly organizationId: string;
  readonly orgRole: OrgRole;
  readonly entitlements: Entitlements;
  readonly expiresAt: Date;
}

export interface IssuedSession {
  /** The `tg_st_…` secret, given out once; only its SHA-256 is stored. */
  readonly token: string;
  readonly session: Session;
}

/** What a session token stands for: the interface's Session object, before presentation. */
export interface SessionView {
  readonly customer: Customer;
  readonly entitlements: Entitlements;
  readonly organizationId?: string;
  readonly orgRole?: OrgRole;
}

/**
 * Customer sessions: issuing `tg_st_…` tokens, describing and ending them. Resolving a token into a
 * Principal is CredentialsService's job; this service owns the rows.
 */
export class SessionsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly organizations: OrganizationsService,
    private readonly entitlements: EntitlementsService,
  ) {}

  /**
   * Issues a session for a customer of an app (optionally in an organization context), valid for the
   * app's `sessionTtlSeconds`. Callers have already checked that the customer (and membership) exist.
   */
  async issue(input: IssueSessionInput): Promise<IssuedSession> {
    const em = this.orm.em;
    const app = await this.apps.appOrFail(input.appId);
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
    const app = await this.apps.appOrFail(appId);
    const session = requireSession(principal);
    if (session.appId !== app.id)
      throw new UnauthorizedError('The session token does not belong to this app');
    const customer = await this.orm.em.findOneOrFail(Customer, { id: session.customerId, app: app.id });
    if (session.organizationId !== undefined) {
      return {
        customer,
        entitlements: await this.entitlements.resolve({
          appId: app.id,
          organizationId: session.organizationId,
        }),
        organizationId: session.organizationId,
        orgRole: session.orgRole,
      };
    }
    return {
      customer,
      entitlements: await this.entitlements.resolve({ appId: app.id, customerId: customer.id }),
    };
  }

  /**
   * A new session token for the calling customer in an organization it belongs to; its session carries
   * `organizationId` and `orgRole`, and its entitlements are the organization's. The calling token stays
   * valid (the client may keep it to return to its personal context).
   */
  async switchOrganization(principal: Principal, organizationId: string): Promise<SwitchedSession> {
    const session = requireSession(principal);
    const membership = await this.organizations.membershipOrFail(session, organizationId);
    const id = membership.organization.id;
    const issued = await this.issue({
      appId: session.appId,
      customerId: session.customerId,
      organizationId: id,
    });
    return {
      sessionToken: issued.token,
      organizationId: id,
      orgRole: membership.role,
      entitlements: await this.entitlements.resolve({ appId: session.appId, organizationId: id }),
      expiresAt: issued.session.expiresAt,
    };
  }

  /** Ends the calling session at once (logout); its token is refused from now on. */
  async revokeSession(principal: Principal): Promise<void> {
    const session = requireSession(principal);
    await this.orm.em.execute('update session set revoked_at = ? where id = ? and revoked_at is null', [
      this.clock.now(),
      session.sessionId,
    ]);
  }
}
