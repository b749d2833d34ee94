import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { type AppScope, type Principal, requireApiKey } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { actingOnApp } from '../apps/app-rules.js';
import { MagicLinkRequest } from '../auth/magic-link-request.entity.js';
import { Session } from '../auth/session.entity.js';
import { OpenCheckout } from '../checkout/open-checkout.entity.js';
import { Customer } from '../customers/customer.entity.js';
import { OrganizationInvitation } from '../organizations/invitation.entity.js';
import { OrganizationMember } from '../organizations/organization.entity.js';
import type { OrganizationsService } from '../organizations/organizations.service.js';
import { Subscription } from '../subscriptions/subscription.entity.js';
import type { SubscriptionLifecycleService } from '../subscriptions/subscription-lifecycle.service.js';
import { hasEnded } from '../subscriptions/subscription-transitions.js';
import { customerIdSchema } from './customer-erasure.schemas.js';

/**
 * Who is being deleted, by id only: every row written on a customer's behalf records the ids of the
 * customers (and organizations) it concerns when it is written, and an erasure selects by those ids,
 * never by searching text for an e-mail or a name (which finds other customers' rows and misses some of
 * the customer's own).
 */
export interface ErasedCustomer {
  readonly appId: string;
  readonly customerId: string;
  readonly sessionIds: readonly string[];
}

/**
 * A store outside the customer's own rows that may hold copies of its personal data (stored idempotent
 * answers; outbound webhook payloads). Each erases them, selected by subject id, in the deletion's
 * transaction; this is also where an outbox records the `customer.deleted` event, so the event exists if
 * and only if the deletion does.
 */
export interface CustomerDataEraser {
  eraseCustomer(em: EntityManager, customer: ErasedCustomer): Promise<void>;
}

/**
 * Deleting a customer (a GDPR erasure request). The customer row goes, and with it (foreign keys) its
 * sessions, magic-link tokens and organization memberships, so its credentials answer 401 at once and
 * the app's customer count drops by one. Its subscriptions stay as billing history without personal data:
 * they keep Stripe's ids, plan, status and dates, lose the customer link and the checkout metadata.
 */
export class CustomerErasureService {
  constructor(
    private readonly orm: MikroORM,
    private readonly organizations: OrganizationsService,
    private readonly lifecycle: SubscriptionLifecycleService,
    private readonly erasers: readonly CustomerDataEraser[],
  ) {}

  /**
   * Cancels the customer's running subscriptions at Stripe, then deletes the customer and every copy of
   * its personal data in one transaction. 409 when the customer is the last owner of an organization
   * (checked before anything is canceled, and again under locks); another app's customer → 404.
   */
  async deleteCustomer(principal: Principal, rawId: unknown, scope?: AppScope): Promise<{ id: string }> {
    const caller = requireApiKey(await actingOnApp(this.orm.em, principal, scope));
    const id = parseInput(customerIdSchema, rawId);
    const em = this.orm.em;
    const customer = await em.findOne(Customer, { id, app: caller.appId });
    if (!customer) throw new NotFoundError('Customer', id);
    await this.organizations.assertNotLastOwnerAnywhere(em, id, { lock: false });

    // At Stripe first, through the same path as POST /v1/subscriptions/:id/cancel (idempotent at
    // Stripe): a failure there leaves the customer in place, and the deletion can simply be retried.
    const running = await em.find(Subscription, { customer: id }, { fields: ['id', 'status'] });
    for (const subscription of running) {
      if (hasEnded(subscription.status)) continue;
      try {
        await this.lifecycle.cancelSubscription(caller, subscription.id, {});
      } catch (error) {
        // Ended meanwhile (a notification from Stripe): nothing left to cancel.
        if (!(error instanceof ConflictError)) throw error;
      }
    }

    return em.transactional(async (tx) => {
      // Organizations first, then the customer: the order member changes take them in (an organization's
      // row, then the customer's through the membership's foreign key), so the two never deadlock.
      await this.organizations.assertNotLastOwnerAnywhere(tx, id, { lock: true });
      const locked = await tx.findOne(
        Customer,
        { id, app: caller.appId },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      if (!locked) throw new NotFoundError('Customer', id);
      // With the customer's row locked no membership can be added any more: one made in between counts too.
      await this.organizations.assertNotLastOwnerAnywhere(tx, id, { lock: false });
      const sessions = await tx.find(Session, { customer: id }, { fields: ['id'] });
      const erased: ErasedCustomer = {
        appId: caller.appId,
        customerId: id,
        sessionIds: sessions.map((session) => session.id),
      };
      for (const eraser of this.erasers) await eraser.eraseCustomer(tx, erased);
      // The abuse-limit rows name the address, not the customer.
      await tx.nativeDelete(MagicLinkRequest, { app: caller.appId, emailLower: locked.email.toLowerCase() });
      // So do invitations sent to the address before it was a customer's (its own: on delete cascade).
      await tx.nativeDelete(OrganizationInvitation, {
        app: caller.appId,
        emailLower: locked.email.toLowerCase(),
      });
      // So do open checkouts started by e-mail before the customer existed (by id: on delete cascade).
      await tx.nativeDelete(OpenCheckout, { app: caller.appId, emailLower: locked.email.toLowerCase() });
      // The caller's checkout metadata travelled with the customer's subscriptions; the billing facts stay.
      await tx.nativeUpdate(Subscription, { customer: id }, { metadata: {} });
      const memberOf = await tx.find(OrganizationMember, { customer: id }, { fields: ['organization'] });
      // Sessions, magic-link tokens, memberships and invitations go with the row (on delete cascade);
      // subscriptions keep their rows with the customer link set to null.
      await tx.nativeDelete(Customer, { id });
      // The organizations it left bill one seat fewer when they pay per seat (their rows are locked above).
      for (const membership of memberOf) {
        await this.organizations.membershipEnded(tx, caller.appId, membership.organization.id);
      }
      return { id };
    });
  }
}
