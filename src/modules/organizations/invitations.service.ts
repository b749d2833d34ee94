import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
} from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { AppScope, OrgRole, Principal } from '../../core/principal.js';
import { hashSecret, randomSecret } from '../../core/tokens.js';
import { parseInput } from '../../core/validation.js';
import type { Logger } from '../../infra/logger.js';
import { App } from '../apps/app.entity.js';
import { actingOnApp } from '../apps/app-rules.js';
import { isAllowedCallbackUrl, parseStoredCallbackPatterns } from '../apps/callback-url.js';
import { verificationLink } from '../auth/verification-link.js';
import { Customer } from '../customers/customer.entity.js';
import type { CustomersService } from '../customers/customers.service.js';
import { type Mailer, sendInBackground } from '../email/mailer.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { OrganizationInvitation } from './invitation.entity.js';
import { invitationEmail } from './invitation-email.js';
import { Organization, OrganizationMember } from './organization.entity.js';
import { presentInvitation } from './organization.presenter.js';
import { invitationIdSchema, inviteSchema, organizationIdSchema } from './organizations.schemas.js';
import { canManageOwners, type OrganizationsService } from './organizations.service.js';
import { assertSeatAvailable } from './seats.js';

/** Recognisable in a leaked URL or a secret scanner, and tells the verify endpoint what the token is. */
export const INVITATION_TOKEN_PREFIX = 'tg_inv_';

/** Invitations one organization may send in any 24 hours. */
export const INVITATIONS_PER_DAY = 100;
const DAY_MS = 24 * 60 * 60 * 1000;

const INVALID_TOKEN = 'Invalid, used or expired magic link token';

export interface InvitationsDeps {
  readonly orm: MikroORM;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly mailer: Mailer;
  readonly publicBaseUrl: string;
  readonly organizations: OrganizationsService;
  readonly customers: CustomersService;
  readonly events: OutboundEvents;
}

/** An accepted invitation: who joined which organization, with which role. */
export interface AcceptedInvitation {
  readonly customer: Customer;
  readonly organizationId: string;
  readonly role: OrgRole;
}

/**
 * Invitations into an organization: an owner or admin (or the app's API key) invites an e-mail address;
 * the e-mailed link signs the invitee in as a login link does and makes it a member. A pending invitation
 * holds a seat, so invitations and member additions are counted together under the organization's lock.
 */
export class InvitationsService {
  constructor(private readonly deps: InvitationsDeps) {}

  private get em() {
    return this.deps.orm.em;
  }

  /** The time invitations are judged at (a pending one past its expiry reads as `expired`). */
  now(): Date {
    return this.deps.clock.now();
  }

  /**
   * Invites `email` into the organization and e-mails the link (after the commit). `redirectUrl` must
   * match the app's callback patterns (400, nothing sent); an admin cannot invite an owner (403); no
   * seat left → 409; more than INVITATIONS_PER_DAY in 24 hours → 429.
   */
  async invite(
    principal: Principal,
    organizationId: unknown,
    input: unknown,
    scope?: AppScope,
  ): Promise<OrganizationInvitation> {
    const caller = await this.#caller(principal, scope);
    const orgId = parseInput(organizationIdSchema, organizationId);
    const { email, role, redirectUrl } = parseInput(inviteSchema, input);
    const app = await this.em.findOneOrFail(App, { id: caller.appId });
    if (!isAllowedCallbackUrl(redirectUrl, parseStoredCallbackPatterns(app.allowedCallbackUrls))) {
      throw ValidationError.forField('redirectUrl', 'does not match any allowed callback URL of this app');
    }
    const now = this.deps.clock.now();
    const emailLower = email.toLowerCase();
    const token = randomSecret(INVITATION_TOKEN_PREFIX);
    const { invitation, organization } = await this.em.transactional(async (em) => {
      const { organization, actor } = await this.deps.organizations.lockForChange(caller, orgId);
      if (role === 'owner' && !canManageOwners(actor))
        throw new ForbiddenError('Only an owner can invite an owner');
      await this.#assertUnderDailyLimit(em, organization, now);
      const customer = await em.findOne(Customer, { app: caller.appId, emailLower });
      if (customer && (await em.findOne(OrganizationMember, { organization, customer }))) {
        throw new ConflictError(`${email} is already a member of this organization`);
      }
      await assertSeatAvailable(em, caller.appId, organization.id, now);
      const invitation = em.create(OrganizationInvitation, {
        id: newId('inv'),
        app: caller.appId,
        organization,
        customer,
        email,
        emailLower,
        role,
        tokenHash: hashSecret(token),
        redirectUrl,
        createdAt: now,
        expiresAt: new Date(now.getTime() + app.invitationExpiryHours * 3_600_000),
      });
      await em.flush();
      await this.deps.events.record(
        em,
        caller.appId,
        'organization.invitation_created',
        { organizationId: organization.id, ...presentInvitation(invitation, now) },
        customer ? [customer.id, organization.id] : [organization.id],
      );
      return { invitation, organization };
    });
    const message = invitationEmail({
      to: email,
      appName: app.name,
      organizationName: organization.name,
      link: verificationLink(this.deps.publicBaseUrl, app, token),
      expiresAt: invitation.expiresAt,
    });
    sendInBackground(this.deps.mailer, this.deps.logger, message, {
      appId: app.id,
      what: 'invitation e-mail could not be sent',
    });
    return invitation;
  }

  /** The organization's invitations, newest first, whatever became of them (owners, admins, API key). */
  async listInvitations(
    principal: Principal,
    organizationId: unknown,
    scope?: AppScope,
  ): Promise<OrganizationInvitation[]> {
    const caller = await this.#caller(principal, scope);
    const orgId = parseInput(organizationIdSchema, organizationId);
    const { organization } = await this.deps.organizations.lockForChange(caller, orgId, { lock: false });
    return this.em.find(
      OrganizationInvitation,
      { organization },
      { orderBy: { createdAt: 'desc', id: 'desc' } },
    );
  }

  /** Revokes a pending invitation: its link stops working and its seat is free. Others → 409. */
  async revokeInvitation(
    principal: Principal,
    organizationId: unknown,
    invitationId: unknown,
    scope?: AppScope,
  ): Promise<OrganizationInvitation> {
    const caller = await this.#caller(principal, scope);
    const orgId = parseInput(organizationIdSchema, organizationId);
    const id = parseInput(invitationIdSchema, invitationId);
    const now = this.deps.clock.now();
    return this.em.transactional(async (em) => {
      const { organization, actor } = await this.deps.organizations.lockForChange(caller, orgId);
      const invitation = await em.findOne(OrganizationInvitation, { id, organization });
      if (!invitation) throw new NotFoundError('Invitation', id);
      if (invitation.role === 'owner' && !canManageOwners(actor))
        throw new ForbiddenError('Only an owner can revoke the invitation of an owner');
      if (invitation.state !== 'pending' || invitation.expiresAt.getTime() <= now.getTime()) {
        throw new ConflictError(`Only a pending invitation can be revoked; this one is not`);
      }
      invitation.state = 'revoked';
      invitation.revokedAt = now;
      await em.flush();
      return invitation;
    });
  }

  /**
   * The e-mailed link opened (`GET …/auth/verify?token=tg_inv_…&redirect=true`): the redirect URL of a
   * pending, unexpired invitation; opening does not use it up (mail scanners open links too).
   */
  async invitationRedirectUrl(appId: string, token: string): Promise<string> {
    const invitation = await this.em.findOne(OrganizationInvitation, {
      tokenHash: hashSecret(token),
      app: appId,
      state: 'pending',
      expiresAt: { $gt: this.deps.clock.now() },
    });
    if (!invitation) throw new UnauthorizedError(INVALID_TOKEN);
    return invitation.redirectUrl;
  }

  /**
   * Accepts an invitation by its token inside `em`'s transaction (the verify endpoint's): one conditional
   * UPDATE uses it up, so of concurrent verifies exactly one gets past it and the others answer 401. The
   * invitee becomes a customer when needed (whatever `autoCreateCustomer` says: an owner or admin invited
   * it) and a member with the invited role; already a member, it keeps its membership.
   */
  async acceptInvitation(em: EntityManager, appId: string, token: string): Promise<AcceptedInvitation> {
    const now = this.deps.clock.now();
    const [accepted] = await em.execute<
      { id: string; organization_id: string; email: string; role: OrgRole }[]
    >(
      `update organization_invitation set state = 'accepted', accepted_at = ?
        where token_hash = ? and app_id = ? and state = 'pending' and expires_at > ?
        returning id, organization_id, email, role`,
      [now, hashSecret(token), appId, now],
    );
    if (!accepted) throw new UnauthorizedError(INVALID_TOKEN);
    // The member changes' lock, then the customer: the order they take them in, so they never deadlock.
    const organization = await em.findOneOrFail(
      Organization,
      { id: accepted.organization_id, app: appId },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    const customer = await this.deps.customers.findOrCreateByEmail(em, appId, accepted.email);
    await em.nativeUpdate(OrganizationInvitation, { id: accepted.id }, { customer: customer.id });
    const existing = await em.findOne(OrganizationMember, { organization, customer });
    if (existing) return { customer, organizationId: organization.id, role: existing.role };
    await this.deps.organizations.insertMember(em, organization, customer, accepted.role, {
      accepting: true,
    });
    return { customer, organizationId: organization.id, role: accepted.role };
  }

  /** The API key or session acting, or the operator acting on the app it names (`scope`, the dashboard). */
  async #caller(principal: Principal, scope: AppScope | undefined) {
    return this.deps.organizations.callerWithOrganizations(await actingOnApp(this.em, principal, scope));
  }

  /** 429 past INVITATIONS_PER_DAY invitations of the organization in the last 24 hours. */
  async #assertUnderDailyLimit(em: EntityManager, organization: Organization, now: Date): Promise<void> {
    const since = new Date(now.getTime() - DAY_MS);
    const [recent] = await em.execute<{ count: number; oldest: Date | null }[]>(
      `select count(*)::int as count, min(created_at) as oldest
         from organization_invitation where organization_id = ? and created_at > ?`,
      [organization.id, since],
    );
    if (recent && recent.count >= INVITATIONS_PER_DAY) {
      const reopensAt = new Date(recent.oldest!).getTime() + DAY_MS;
      throw new RateLimitedError(
        `At most ${INVITATIONS_PER_DAY} invitations per organization in 24 hours, try again later`,
        Math.max(1, Math.ceil((reopensAt - now.getTime()) / 1000)),
      );
    }
  }
}
