import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { NotificationOutcome } from '../../telemetry/metrics.js';
import { App } from '../apps/app.entity.js';
import { type CheckoutBuyer, decodeCallerMetadata, readTracking } from '../checkout/checkout-metadata.js';
import { Customer } from '../customers/customer.entity.js';
import type { CustomersService } from '../customers/customers.service.js';
import { Organization } from '../organizations/organization.entity.js';
import type {
  PaymentProvider,
  ProviderCheckoutSession,
  ProviderEvent,
  ProviderSubscription,
} from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';
import { Subscription } from './subscription.entity.js';
import { ownerOf, type SubscriptionChange, type SubscriptionEvents } from './subscription-events.js';
import {
  applyNewerProviderEvent,
  applyNewerProviderEventReturningRows,
  applyProviderState,
} from './subscription-sync.js';

/** Raised for a notification Tollgate cannot apply yet; answered 500 so Stripe retries it. */
class NotificationNotApplicable extends Error {}

/**
 * Stripe's notifications, applied: a completed checkout creates the subscription (and, for a checkout by
 * e-mail, the customer); subscription and invoice events keep it in sync. Every event id is recorded in
 * `processed_event` in the same transaction as its effect, so each is applied exactly once however often
 * and however concurrently Stripe delivers it.
 */
export class ProviderNotificationsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
    private readonly customers: CustomersService,
    private readonly events: SubscriptionEvents,
    /** Told how each notification ended, for the metrics. */
    private readonly onOutcome: (outcome: NotificationOutcome) => void = () => undefined,
  ) {}

  /**
   * Verifies a notification on its raw body; the receiver then names the event and applies it. What no
   * retry can mend is refused (400): a bad, missing, expired or future-dated signature, an event missing
   * what its type requires. What may work later (the database, Stripe, a record not there yet) fails
   * (500) in `applyStripeNotification`, so Stripe delivers it again.
   */
  verifyStripeNotification(rawBody: Buffer, signature: string | undefined): ProviderEvent {
    try {
      return this.payments.verifyEvent(rawBody, signature);
    } catch (error) {
      this.onOutcome(error instanceof ValidationError ? 'refused' : 'failed');
      throw error;
    }
  }

  /** Applies a verified notification; `applied: false` when it was a duplicate or none of Tollgate's business. */
  async applyStripeNotification(event: ProviderEvent): Promise<{ applied: boolean }> {
    try {
      const result = await this.#apply(event);
      this.onOutcome(result.applied ? 'applied' : 'ignored');
      return result;
    } catch (error) {
      this.onOutcome(error instanceof ValidationError ? 'refused' : 'failed');
      throw error;
    }
  }

  async #apply(event: ProviderEvent): Promise<{ applied: boolean }> {
    switch (event.kind) {
      case 'checkout_completed':
        return this.#checkoutCompleted(event, event.session);
      case 'subscription':
        return this.#subscriptionChanged(event, event.subscription);
      case 'invoice': {
        if (!event.subscriptionId) return { applied: false };
        // An invoice says little about its subscription: read the subscription's current state instead.
        const remote = await this.payments.retrieveSubscription(event.subscriptionId);
        return remote ? this.#subscriptionChanged(event, remote) : { applied: false };
      }
      case 'ignored':
        return { applied: false };
    }
  }

  async #checkoutCompleted(
    event: ProviderEvent,
    session: ProviderCheckoutSession,
  ): Promise<{ applied: boolean }> {
    const tracking = readTracking(session.metadata);
    // A checkout made elsewhere in the same Stripe account is none of Tollgate's business.
    if (!tracking || !session.subscriptionId) return { applied: false };
    // Read before the transaction so no row lock is held across a network call.
    const remote = await this.payments.retrieveSubscription(session.subscriptionId);
    if (!remote) {
      throw new NotificationNotApplicable(
        `subscription ${session.subscriptionId} of ${session.id} is unknown to Stripe`,
      );
    }
    return this.orm.em.transactional(async (em) => {
      if (!(await markProcessed(em, event))) return { applied: false };
      const app = await em.findOne(App, { id: tracking.appId });
      const plan = app ? await em.findOne(Plan, { app: app.id, slug: tracking.planId }) : null;
      if (!app || !plan) {
        throw new NotificationNotApplicable(
          `checkout ${session.id} names app ${tracking.appId} / plan ${tracking.planId}, which do not exist`,
        );
      }
      const owner = await this.#owner(em, app, tracking.buyer, session, remote);
      let subscription = await em.findOne(
        Subscription,
        { stripeSubscriptionId: remote.id },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      let change: SubscriptionChange;
      if (subscription) {
        // Loaded after the lock, not with it (a joined plan would be locked as well).
        await em.populate(subscription, ['plan']);
        change = await this.events.begin(em, ownerOf(subscription), subscription);
      } else {
        change = await this.events.begin(
          em,
          owner.organization
            ? { appId: app.id, organizationId: owner.organization.id }
            : { appId: app.id, customerId: owner.customer!.id },
          null,
        );
        subscription = em.create(Subscription, {
          id: newId('sub'),
          app,
          customer: owner.customer,
          organization: owner.organization,
          plan,
          stripeSubscriptionId: remote.id,
          stripeCustomerId: remote.customerId,
          status: 'incomplete',
          metadata: decodeCallerMetadata(remote.metadata),
        });
      }
      if (event.created >= subscription.providerEventCreated) {
        await applyProviderState(em, subscription, remote, event.created);
      }
      await change.done(subscription);
      return { applied: true };
    });
  }

  /** Who the new subscription belongs to; a checkout by e-mail creates the customer or links the existing one. */
  async #owner(
    em: EntityManager,
    app: App,
    buyer: CheckoutBuyer,
    session: ProviderCheckoutSession,
    remote: ProviderSubscription,
  ): Promise<{ customer: Customer | null; organization: Organization | null }> {
    if ('organizationId' in buyer) {
      const organization = await em.findOne(Organization, { id: buyer.organizationId, app: app.id });
      if (!organization)
        throw new NotificationNotApplicable(`organization ${buyer.organizationId} does not exist`);
      organization.paymentCustomerId ??= remote.customerId;
      return { customer: null, organization };
    }
    let customer: Customer | null;
    if ('customerId' in buyer) {
      customer = await em.findOne(Customer, { id: buyer.customerId, app: app.id });
      if (!customer) throw new NotificationNotApplicable(`customer ${buyer.customerId} does not exist`);
    } else {
      const email = session.customerEmail ?? buyer.email;
      customer = await this.customers.findOrCreateByEmail(em, app.id, email, { name: session.customerName });
    }
    await this.customers.linkPaymentCustomer(em, customer, remote.customerId);
    return { customer, organization: null };
  }

  async #subscriptionChanged(
    event: ProviderEvent,
    remote: ProviderSubscription,
  ): Promise<{ applied: boolean }> {
    // The common case (a newer event, or a duplicate) in one statement; events of one second, and events
    // of an app whose endpoints want to hear of the change, below.
    const outcome = await applyNewerProviderEvent(this.orm.em, event, remote);
    if (outcome === 'record_events') {
      // The same statement again, in a transaction that records the change's events with it.
      const applied = await this.orm.em.transactional(async (em) => {
        const result = await applyNewerProviderEventReturningRows(em, event, remote);
        if (typeof result === 'string') return result;
        await this.events.recordApplied(em, result.before, result.after);
        return 'applied' as const;
      });
      if (applied !== 'same_second') return { applied: applied === 'applied' };
    } else if (outcome !== 'same_second') {
      return { applied: outcome === 'applied' };
    }
    return this.orm.em.transactional(async (em) => {
      // The row lock first, then the id: the order the single statement takes them in, so the two paths
      // never wait for each other in a cycle.
      const subscription = await em.findOne(
        Subscription,
        { stripeSubscriptionId: remote.id },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!(await markProcessed(em, event))) return { applied: false };
      // Not (yet) Tollgate's: the completed-checkout notification creates it with the state read then.
      if (!subscription) return { applied: false };
      // A late, older event must not move the subscription back to an earlier state.
      if (event.created < subscription.providerEventCreated) return { applied: false };
      // Events of one second cannot be ordered by `created` (nor against a cancel/pause/resume made
      // through Tollgate in that second): for those, the state read now, under the row lock such changes
      // also take, is the latest whatever order the events arrive in.
      const latest =
        event.created === subscription.providerEventCreated
          ? ((await this.payments.retrieveSubscription(remote.id)) ?? remote)
          : remote;
      // Loaded after the lock, not with it: a joined plan would be locked too, serialising every
      // subscription of the plan behind one row.
      await em.populate(subscription, ['plan']);
      const change = await this.events.begin(em, ownerOf(subscription), subscription);
      await applyProviderState(em, subscription, latest, event.created);
      await change.done(subscription);
      return { applied: true };
    });
  }
}

/**
 * Records the event id in the caller's transaction; false when it was already recorded. A concurrent
 * delivery of the same id waits here for the first one's transaction and then sees the conflict.
 */
async function markProcessed(em: EntityManager, event: ProviderEvent): Promise<boolean> {
  const rows = await em
    .getConnection()
    .execute<{ id: string }[]>(
      'insert into processed_event (id, type) values (?, ?) on conflict (id) do nothing returning id',
      [event.id, event.type],
      'all',
      em.getTransactionContext(),
    );
  return rows.length === 1;
}
