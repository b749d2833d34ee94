import { ForeignKeyConstraintViolationException, LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import {
  type AppPrincipal,
  type AppScope,
  type OrgRole,
  type Principal,
  requireAppPrincipal,
  requireSession,
} from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { actingOnApp, assertOrganizationsEnabled } from '../apps/app-rules.js';
import { Customer } from '../customers/customer.entity.js';
import { assertMetadataLimits } from '../customers/customers.schemas.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { Organization, OrganizationMember } from './organization.entity.js';
import { presentMembershipEvent } from './organization.presenter.js';
import {
  addMemberSchema,
  createOrganizationSchema,
  listOrganizationsSchema,
  organizationIdSchema,
  removeMemberSchema,
  updateMemberRoleSchema,
} from './organizations.schemas.js';
import type { SeatBilling } from './seat-billing.js';
import { assertSeatAvailable, planSeatsOf, readSeats, type SeatUsage } from './seats.js';

/** Who acts on an organization: the app's server (API key) or a member with a role. */
export type Actor = 'apiKey' | OrgRole;

const canManage = (actor: Actor) => actor !== 'member';

/**
 * A membership insert that lost a race with the customer's deletion (found, then deleted before the
 * insert) fails its foreign key: the customer is absent by then, as a 404 says.
 */
function rethrowIfCustomerGone(error: unknown, customerId: string): never {
  if (error instanceof ForeignKeyConstraintViolationException)
    throw new NotFoundError('Customer', customerId);
  throw error;
}
/** Only the app (API key) or an owner may make, unmake or remove owners. */
export const canManageOwners = (actor: Actor) => actor === 'apiKey' || actor === 'owner';

/**
 * Organizations (B2B): members share the organization's subscription. Only for apps with
 * `organizationsEnabled` (else 403). Managed by the app's API key or by owner/admin sessions; every
 * organization keeps at least one owner. Member changes of one organization are serialized by a row
 * lock on it, so two concurrent demotions can never leave it without an owner.
 */
export class OrganizationsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly events: OutboundEvents,
    private readonly seatBilling: SeatBilling,
  ) {}

  private get em() {
    return this.orm.em;
  }

  /** Creates an organization; its first owner is `ownerCustomerId` (API key) or the calling customer. */
  async createOrganization(principal: Principal, input: unknown): Promise<Organization> {
    const caller = await this.callerWithOrganizations(principal);
    const { name, metadata, ownerCustomerId } = parseInput(createOrganizationSchema, input);
    if (metadata) assertMetadataLimits(metadata);
    let ownerId: string;
    if (caller.kind === 'apiKey') {
      if (ownerCustomerId === undefined)
        throw ValidationError.forField('ownerCustomerId', 'is required with an API key');
      ownerId = ownerCustomerId;
    } else {
      if (ownerCustomerId !== undefined) {
        throw ValidationError.forField(
          'ownerCustomerId',
          'a session creates organizations owned by its own customer',
        );
      }
      ownerId = caller.customerId;
    }
    const owner = await this.#customerOrFail(caller.appId, ownerId);
    const organization = this.em.create(Organization, {
      id: newId('org'),
      app: caller.appId,
      name,
      metadata: metadata ?? {},
    });
    this.em.create(OrganizationMember, { id: newId('mem'), organization, customer: owner, role: 'owner' });
    await this.em.flush().catch((error: unknown) => rethrowIfCustomerGone(error, ownerId));
    return organization;
  }

  /**
   * An organization of the app (API key, or the operator naming the app: `scope`) or one the calling
   * customer belongs to; else null.
   */
  async getOrganization(
    principal: Principal,
    organizationId: string,
    scope?: AppScope,
  ): Promise<Organization | null> {
    const caller = await this.callerWithOrganizations(await actingOnApp(this.em, principal, scope));
    const id = parseInput(organizationIdSchema, organizationId);
    if (caller.kind === 'apiKey') return this.em.findOne(Organization, { id, app: caller.appId });
    const membership = await this.em.findOne(
      OrganizationMember,
      { organization: { id, app: caller.appId }, customer: caller.customerId },
      { populate: ['organization'] },
    );
    return membership?.organization ?? null;
  }

  /**
   * The organizations of a customer: `customerId` with an API key (or the operator naming the app,
   * `scope`), the caller's own with a session.
   */
  async listOrganizations(principal: Principal, input: unknown, scope?: AppScope): Promise<Organization[]> {
    const caller = await this.callerWithOrganizations(await actingOnApp(this.em, principal, scope));
    const { customerId } = parseInput(listOrganizationsSchema, input);
    let of: string;
    if (caller.kind === 'apiKey') {
      if (customerId === undefined)
        throw ValidationError.forField('customerId', 'is required with an API key');
      of = (await this.#customerOrFail(caller.appId, customerId)).id;
    } else {
      if (customerId !== undefined && customerId !== caller.customerId) {
        throw new NotFoundError('Customer', customerId);
      }
      of = caller.customerId;
    }
    const memberships = await this.em.find(
      OrganizationMember,
      { customer: of, organization: { app: caller.appId } },
      { populate: ['organization'], orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    return memberships.map((m) => m.organization);
  }

  /** The members of an organization the caller can see, oldest first, with their customers. */
  async listMembers(
    principal: Principal,
    organizationId: string,
    scope?: AppScope,
  ): Promise<OrganizationMember[]> {
    const organization = await this.getOrganization(principal, organizationId, scope);
    if (!organization) throw new NotFoundError('Organization', organizationId);
    return this.em.find(
      OrganizationMember,
      { organization },
      { populate: ['customer'], orderBy: { createdAt: 'asc', id: 'asc' } },
    );
  }

  /** Adds a customer of the app to an organization (default role `member`). */
  async addMember(principal: Principal, input: unknown): Promise<OrganizationMember> {
    const caller = await this.callerWithOrganizations(principal);
    const { organizationId, customerId, role } = parseInput(addMemberSchema, input);
    const added = this.em.transactional(async (em) => {
      const { organization, actor } = await this.lockForChange(caller, organizationId);
      if (role === 'owner' && !canManageOwners(actor))
        throw new ForbiddenError('Only an owner can add an owner');
      const customer = await this.#customerOrFail(caller.appId, customerId);
      if (await em.findOne(OrganizationMember, { organization, customer })) {
        throw new ConflictError(`Customer ${customerId} is already a member of this organization`);
      }
      return this.insertMember(em, organization, customer, role);
    });
    return added.catch((error: unknown) => rethrowIfCustomerGone(error, customerId));
  }

  /**
   * Adds a membership inside `em`'s transaction, which holds the organization's row lock (see
   * `lockForChange`): refused (409) when no seat is left, and recorded as `organization.member_added`.
   * `accepting`: the member comes with an accepted invitation, whose seat was held (see seats.ts).
   */
  async insertMember(
    em: EntityManager,
    organization: Organization,
    customer: Customer,
    role: OrgRole,
    options: { accepting?: boolean } = {},
  ): Promise<OrganizationMember> {
    const appId = organization.app.id;
    const seats = await assertSeatAvailable(em, appId, organization.id, this.clock.now(), options);
    const member = em.create(OrganizationMember, { id: newId('mem'), organization, customer, role });
    await em.flush();
    if (seats.plan?.mode === 'per_seat') await this.seatBilling.membershipChanged(em, organization.id);
    await this.events.record(em, appId, 'organization.member_added', presentMembershipEvent(member), [
      customer.id,
      organization.id,
    ]);
    return member;
  }

  /**
   * After a membership ended (a removal, a customer's erasure), in its transaction under the
   * organization's row lock: a per-seat organization's quantity follows (see SeatBilling).
   */
  async membershipEnded(em: EntityManager, appId: string, organizationId: string): Promise<void> {
    if ((await planSeatsOf(em, appId, organizationId))?.mode === 'per_seat')
      await this.seatBilling.membershipChanged(em, organizationId);
  }

  /** `GET /v1/organizations/:id/seats`: seats used (members and pending invitations) and the limit. */
  async getSeats(principal: Principal, organizationId: string, scope?: AppScope): Promise<SeatUsage> {
    const organization = await this.getOrganization(principal, organizationId, scope);
    if (!organization) throw new NotFoundError('Organization', organizationId);
    return readSeats(this.em, organization.app.id, organization.id, this.clock.now());
  }

  /** Changes a member's role; the last owner cannot be demoted. */
  async updateMemberRole(principal: Principal, input: unknown): Promise<OrganizationMember> {
    const caller = await this.callerWithOrganizations(principal);
    const { organizationId, customerId, role } = parseInput(updateMemberRoleSchema, input);
    return this.em.transactional(async (em) => {
      const { organization, actor } = await this.lockForChange(caller, organizationId);
      const member = await this.#memberOrFail(organization, customerId);
      if ((member.role === 'owner' || role === 'owner') && !canManageOwners(actor)) {
        throw new ForbiddenError('Only an owner can grant or change the owner role');
      }
      if (member.role === 'owner' && role !== 'owner') await this.#keepAnOwner(organization);
      member.role = role;
      await em.flush();
      return member;
    });
  }

  /** Removes a member (or lets a member leave); the last owner cannot be removed. */
  async removeMember(principal: Principal, input: unknown): Promise<void> {
    const caller = await this.callerWithOrganizations(principal);
    const { organizationId, customerId } = parseInput(removeMemberSchema, input);
    const leaving = caller.kind === 'session' && caller.customerId === customerId;
    await this.em.transactional(async (em) => {
      const { organization, actor } = await this.lockForChange(caller, organizationId, { leaving });
      const member = await this.#memberOrFail(organization, customerId);
      if (!leaving && member.role === 'owner' && !canManageOwners(actor)) {
        throw new ForbiddenError('Only an owner can remove an owner');
      }
      if (member.role === 'owner') await this.#keepAnOwner(organization);
      const removed = presentMembershipEvent(member);
      em.remove(member);
      await em.flush();
      await this.membershipEnded(em, caller.appId, organization.id);
      await this.events.record(em, caller.appId, 'organization.member_removed', removed, [
        customerId,
        organization.id,
      ]);
    });
  }

  /**
   * Refuses (409) when the customer is the last owner of an organization, so that removing the customer
   * (its deletion) never leaves one without an owner. Given a transaction `em`, the customer's
   * organizations are locked first, in id order, as member changes lock them, so a concurrent demotion
   * of the other owner waits for the deletion or is judged after it.
   */
  async assertNotLastOwnerAnywhere(
    em: EntityManager,
    customerId: string,
    options: { lock: boolean },
  ): Promise<void> {
    if (options.lock) {
      const held = await em.find(
        OrganizationMember,
        { customer: customerId },
        { orderBy: { organization: 'asc' } },
      );
      for (const membership of held) {
        await em.findOne(Organization, membership.organization.id, { lockMode: LockMode.PESSIMISTIC_WRITE });
      }
    }
    // Read again under the locks: the roles are the ones the member changes left.
    const memberships = await em.find(OrganizationMember, { customer: customerId }, { refresh: true });
    for (const membership of memberships) {
      if (membership.role !== 'owner') continue;
      const owners = await em.count(OrganizationMember, {
        organization: membership.organization,
        role: 'owner',
      });
      if (owners <= 1) {
        throw new ConflictError(
          `Customer ${customerId} is the last owner of organization ${membership.organization.id}: make another member owner first`,
        );
      }
    }
  }

  /**
   * The calling customer's membership of an organization of its app (404 when it is not a member), for
   * a session that switches into that organization's context.
   */
  async membershipOrFail(principal: Principal, organizationId: string): Promise<OrganizationMember> {
    const session = requireSession(principal);
    await this.callerWithOrganizations(session);
    const id = parseInput(organizationIdSchema, organizationId);
    const membership = await this.em.findOne(OrganizationMember, {
      organization: { id, app: session.appId },
      customer: session.customerId,
    });
    if (!membership) throw new NotFoundError('Organization', organizationId);
    return membership;
  }

  /** An API key or session of an app that has organizations enabled. */
  async callerWithOrganizations(principal: Principal): Promise<AppPrincipal> {
    const caller = requireAppPrincipal(principal);
    assertOrganizationsEnabled(await this.em.findOne(App, { id: caller.appId }));
    return caller;
  }

  /**
   * Locks the organization for a member change and says who acts: the API key, or the calling
   * customer's role. A customer outside the organization gets 404; a plain member 403, unless leaving.
   * `lock: false` checks the same for a read by a manager (the invitations list).
   */
  async lockForChange(
    caller: AppPrincipal,
    organizationId: string,
    options: { leaving?: boolean; lock?: boolean } = {},
  ): Promise<{ organization: Organization; actor: Actor }> {
    const organization = await this.em.findOne(
      Organization,
      { id: organizationId, app: caller.appId },
      options.lock === false ? {} : { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!organization) throw new NotFoundError('Organization', organizationId);
    if (caller.kind === 'apiKey') return { organization, actor: 'apiKey' };
    const own = await this.em.findOne(OrganizationMember, { organization, customer: caller.customerId });
    if (!own) throw new NotFoundError('Organization', organizationId);
    if (!canManage(own.role) && !options.leaving) {
      throw new ForbiddenError('Only owners and admins can manage members');
    }
    return { organization, actor: own.role };
  }

  async #memberOrFail(organization: Organization, customerId: string): Promise<OrganizationMember> {
    const member = await this.em.findOne(OrganizationMember, { organization, customer: customerId });
    if (!member) throw new NotFoundError('Organization member', customerId);
    return member;
  }

  async #keepAnOwner(organization: Organization): Promise<void> {
    const owners = await this.em.count(OrganizationMember, { organization, role: 'owner' });
    if (owners <= 1) throw new ConflictError('An organization must keep at least one owner');
  }

  async #customerOrFail(appId: string, customerId: string): Promise<Customer> {
    const customer = await this.em.findOne(Customer, { id: customerId, app: appId });
    if (!customer) throw new NotFoundError('Customer', customerId);
    return customer;
  }
}
