import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { UnauthorizedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type OrgRole, type Principal, requireSession, type SessionPrincipal } from '../../core/principal.js';
import { hashSecret, randomSecret, SESSION_TOKEN_PREFIX } from '../../core/tokens.js';
import { parseInput } from '../../core/validation.js';
import { type ChangeFeed, customerChangeTags, customerTag, FeedCache } from '../../infra/change-feed.js';
import type { AppsService } from '../apps/apps.service.js';
import { Customer, type Metadata } from '../customers/customer.entity.js';
import type {
  EntitledState,
  Entitlements,
  EntitlementsService,
} from '../entitlements/entitlements.service.js';
import type { OrganizationsService } from '../organizations/organizations.service.js';
import { switchOrganizationSchema } from './auth.schemas.js';
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
  readonly customer: SessionCustomer;
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
  /** The entitlement version of the context (`Tollgate-Entitlements-Version`). */
  readonly entitlementsVersion?: number;
  readonly organizationId?: string;
  readonly orgRole?: OrgRole;
}

/** A session's entitlements and their version, from the context's entitled state. */
function stateView(state: EntitledState): { entitlements: Entitlements; entitlementsVersion: number } {
  return { entitlements: state.entitlements, entitlementsVersion: state.version };
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
    private readonly apps: AppsService,
    private readonly organizations: OrganizationsService,
    private readonly entitlements: EntitlementsService,
    private readonly changes: ChangeFeed,
  ) {
    this.#customers = new FeedCache(changes, customerChangeTags);
  }

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
    const session = await this.#sessionOfApp(principal, appId);
    const id = session.appId;
    // One change-feed barrier for both cached lookups (customer, entitlements) of the request.
    const synced = await this.changes.synced();
    const customer = await this.#customers.get(
      session.customerId,
      () => this.loadCustomer(id, session.customerId),
      (c) => [customerTag(c.id)],
      undefined,
      synced,
    );
    if (session.organizationId !== undefined) {
      return {
        customer,
        ...stateView(
          await this.entitlements.resolveState({ appId: id, organizationId: session.organizationId }, synced),
        ),
        organizationId: session.organizationId,
        orgRole: session.orgRole,
      };
    }
    return {
      customer,
      ...stateView(await this.entitlements.resolveState({ appId: id, customerId: customer.id }, synced)),
    };
  }

  /**
   * A new session token for the calling customer in an organization it belongs to; its session carries
   * `organizationId` and `orgRole`, and its entitlements are the organization's. The calling token stays
   * valid (the client may keep it to return to its personal context).
   */
  async switchOrganization(principal: Principal, input: unknown, appId?: string): Promise<SwitchedSession> {
    const session =
      appId === undefined ? requireSession(principal) : await this.#sessionOfApp(principal, appId);
    const { organizationId } = parseInput(switchOrganizationSchema, input);
    const membership = await this.organizations.membershipOrFail(session, organizationId);
    const id = membership.organization.id;
    const issued = await this.issue({
      appId: session.appId,
      customerId: session.customerId,
      organizationId: id,
    });
    return {
      sessionToken: issued.token,
      customer: await this.loadCustomer(session.appId, session.customerId),
      organizationId: id,
      orgRole: membership.role,
      entitlements: await this.entitlements.resolve({ appId: session.appId, organizationId: id }),
      expiresAt: issued.session.expiresAt,
    };
  }

  /**
   * The calling session when it belongs to app `appId` (the `/v1/apps/:appId/auth/…` paths). An API key
   * → 403; an unknown app → 404; a session token of another app → 401.
   */
  async #sessionOfApp(principal: Principal, appId: string): Promise<SessionPrincipal> {
    // A live session of this very app proves the app exists (deleting an app deletes its sessions).
    if (principal.kind === 'session' && principal.appId === appId) return principal;
    await this.apps.appOrFail(appId);
    requireSession(principal);
    throw new UnauthorizedError('The session token does not belong to this app');
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

  /**
   * Ends the calling session at once (logout); its token is refused from now on. With `appId` (the REST
   * path), the session must belong to that app.
   */
  async revokeSession(principal: Principal, appId?: string): Promise<void> {
    const session =
      appId === undefined ? requireSession(principal) : await this.#sessionOfApp(principal, appId);
    await this.orm.em.execute('update session set revoked_at = ? where id = ? and revoked_at is null', [
      this.clock.now(),
      session.sessionId,
    ]);
  }
}
