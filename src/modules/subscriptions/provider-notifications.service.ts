import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { ValidationError } from '../../core/errors.js';
import type { Logger } from '../../infra/logger.js';
import type { NotificationOutcome } from '../../telemetry/metrics.js';
import { App } from '../apps/app.entity.js';
import {
  type CheckoutBuyer,
  type CheckoutTracking,
  decodeCallerMetadata,
  readTracking,
} from '../checkout/checkout-metadata.js';
import { OpenCheckout } from '../checkout/open-checkout.entity.js';
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
import { ProviderEventBatches } from './provider-event-batches.js';
import { Subscription } from './subscription.entity.js';
import { ownerOf, type SubscriptionEvents } from './subscription-events.js';
import {
  type ImportOutcome,
  importSubscription,
  planForPrices,
  type SubscriptionOwner,
  unmatchedPrice,
} from './subscription-import.js';
import { applyNewerProviderEvent, applyProviderState } from './subscription-sync.js';
import { hasEnded } from './subscription-transitions.js';

/** Raised for a notification Tollgate cannot apply yet; answered 500 so Stripe retries it. */
class NotificationNotApplicable extends Error {}

/**
 * Reads and writes of a subscription changed by others meanwhile, before its notification waits for the
 * row lock instead (many deliveries for one subscription at once).
 */
const OPTIMISTIC_TRIES = 5;

/** How many recorded event ids a process remembers (see `RecordedEvents`). */
const REMEMBERED_EVENTS = 10_000;

/**
 * The ids of the newest events this process saw recorded in `processed_event` by a statement that has
 * committed: Stripe delivers an event again when an answer was slow or lost, and such a delivery is
 * answered from memory, without a statement. An id forgotten (the oldest go first), or recorded by
 * another instance, goes to the database as before.
 */
class RecordedEvents {
  readonly #ids = new Set<string>();

  has(id: string): boolean {
    return this.#ids.has(id);
  }

  add(id: string): void {
    if (this.#ids.has(id)) return;
    this.#ids.add(id);
    if (this.#ids.size > REMEMBERED_EVENTS) this.#ids.delete(this.#ids.values().next().value!);
  }
}

/** Rolls back an import whose row another importer created meanwhile. */
class RowAppeared extends Error {}

/**
 * Rolls back an import whose checkout named a customer that no longer exists: deleted (an erasure
 * request) after its checkout began. Customer ids are never reused, and a checkout can only be started
 * for a customer that exists, so an absent one is a deleted one; no retry can ever bring it back.
 */
class BuyerDeleted extends Error {
  constructor(
    readonly appId: string,
    readonly customerId: string,
  ) {
    super(`customer ${customerId} was deleted`);
  }
}

/**
 * Stripe's notifications, applied: a completed checkout creates the subscription (and, for a checkout by
 * e-mail, the customer); subscription and invoice events keep it in sync. Every event id is recorded in
 * `processed_event` in the same transaction as its effect, so each is applied exactly once however often
 * and however concurrently Stripe delivers it.
 */
export class ProviderNotificationsService {
  /** Per Stripe subscription, the end of the queue of its notifications that change its MRR. */
  readonly #queues = new Map<string, Promise<void>>();
  /** The receiver's statements, shared by the notifications that arrive together. */
  readonly #statements: ProviderEventBatches;
  readonly #recorded = new RecordedEvents();

  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
    private readonly customers: CustomersService,
    private readonly events: SubscriptionEvents,
    /** Told how each notification ended, for the metrics. */
    private readonly onOutcome: (outcome: NotificationOutcome) => void = () => undefined,
    private readonly logger?: Logger,
    /** Optimistic tries of a newer event before it waits for the row lock (0 in tests of that path). */
    private readonly optimisticTries: number = OPTIMISTIC_TRIES,
    /** Told how many statements each shared call carried, for the metrics. */
    onSharedCall?: (statements: number) => void,
  ) {
    this.#statements = new ProviderEventBatches(
      () => orm.em.getConnection().getNativeClient() as Promise<pg.Pool>,
      onSharedCall,
      logger,
    );
  }

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
    if (this.#recorded.has(event.id)) {
      this.onOutcome('ignored');
      return { applied: false };
    }
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
    await this.#expireOtherCheckouts(tracking, session);
    try {
      return await this.#completeCheckout(event, session, tracking, remote);
    } catch (error) {
      if (!(error instanceof BuyerDeleted)) throw error;
      return this.#buyerDeleted(event, remote, error);
    }
  }

  async #completeCheckout(
    event: ProviderEvent,
    session: ProviderCheckoutSession,
    tracking: CheckoutTracking,
    remote: ProviderSubscription,
  ): Promise<{ applied: boolean }> {
    return this.orm.em.transactional(async (em) => {
      if (!(await markProcessed(em, event))) return { applied: false };
      const { app, plan } = await this.#trackedAppAndPlan(em, tracking, session.id);
      const owner = await this.#owner(em, app, tracking.buyer, session, remote);
      // The subscription's own notification may have created the row already: this completes it. `remote`
      // was read before the transaction; a row changed since in the checkout's very second (a cancellation,
      // say) takes Stripe's state read again under the row lock instead, as `created` cannot order them.
      const outcome = await importSubscription(em, {
        owner,
        plan,
        remote,
        metadata: decodeCallerMetadata(remote.metadata),
        asOf: event.created,
        latest: () => this.payments.retrieveSubscription(remote.id),
        events: this.events,
        cause: 'checkout',
        existing: 'apply',
      });
      this.#imported(event, outcome, owner);
      // Applied even when the row was already complete: the owner was linked to its Stripe customer.
      return { applied: outcome.kind !== 'skipped' };
    });
  }

  /**
   * Expires the buyer's other open checkout sessions at the provider, so a second tab or an older link
   * cannot be paid as well (unless the app allows several subscriptions). Done before the subscription
   * is recorded, outside any transaction: a failure fails the notification, whose retry expires again
   * (expiring is idempotent).
   */
  async #expireOtherCheckouts(tracking: CheckoutTracking, session: ProviderCheckoutSession): Promise<void> {
    const em = this.orm.em.fork();
    const app = await em.findOne(App, { id: tracking.appId });
    const done = [session.id];
    if (app && !app.allowMultipleSubscriptions) {
      const buyer = tracking.buyer;
      let owner: object;
      if ('organizationId' in buyer) owner = { organization: buyer.organizationId };
      else {
        const email = 'email' in buyer ? (session.customerEmail ?? buyer.email) : null;
        const customer =
          'customerId' in buyer
            ? await em.findOne(Customer, { id: buyer.customerId, app: app.id })
            : await em.findOne(Customer, { app: app.id, emailLower: email!.toLowerCase() });
        const emails = [email, customer?.email].flatMap((e) => (e ? [e.toLowerCase()] : []));
        const customers = 'customerId' in buyer ? [buyer.customerId] : customer ? [customer.id] : [];
        owner = { $or: [{ customer: { $in: customers } }, { emailLower: { $in: emails } }] };
      }
      const others = await em.find(OpenCheckout, { app: app.id, id: { $ne: session.id }, ...owner });
      for (const other of others) {
        await this.payments.expireCheckoutSession(other.id);
        done.push(other.id);
        this.logger?.info(
          { appId: app.id, checkoutSessionId: other.id, completedCheckoutSessionId: session.id },
          'stripe notification: expired another open checkout of the buyer',
        );
      }
    }
    await em.nativeDelete(OpenCheckout, { id: { $in: done } });
  }

  /** The app and plan a checkout's tracking names; absent ones fail (500) so Stripe retries. */
  async #trackedAppAndPlan(
    em: EntityManager,
    tracking: CheckoutTracking,
    source: string,
  ): Promise<{ app: App; plan: Plan }> {
    const app = await em.findOne(App, { id: tracking.appId });
    const plan = app ? await em.findOne(Plan, { app: app.id, slug: tracking.planId }) : null;
    if (!app || !plan) {
      throw new NotificationNotApplicable(
        `${source} names app ${tracking.appId} / plan ${tracking.planId}, which do not exist`,
      );
    }
    return { app, plan };
  }

  /**
   * A notification about a subscription Tollgate has no row of: imported as a sync would import it. A
   * subscription made by a Tollgate checkout carries the checkout's tracking (its `created` notification
   * may come before the completed checkout: whichever comes first creates the row); one made elsewhere
   * (Stripe's dashboard) belongs to the customer or organization linked to its Stripe customer, on the
   * plan sold at its price. A Stripe customer Tollgate does not know is none of its business.
   */
  async #importUnknown(event: ProviderEvent, remote: ProviderSubscription): Promise<{ applied: boolean }> {
    const tracking = readTracking(remote.metadata);
    // A checkout by e-mail creates the customer with what the buyer entered at Stripe, which the Stripe
    // customer holds; read before the transaction so no lock is held across a network call.
    const buyer =
      tracking && 'email' in tracking.buyer ? await this.payments.retrieveCustomer(remote.customerId) : null;
    const counted = await this.#withCoupons(remote);
    try {
      return await this.#importNew(event, counted, tracking, buyer);
    } catch (error) {
      if (error instanceof BuyerDeleted) return this.#buyerDeleted(event, remote, error);
      if (!(error instanceof RowAppeared)) throw error;
      // Created meanwhile (its checkout, a sync): rolled back, and applied by the rules for a known row.
      return this.#subscriptionChanged(event, remote);
    }
  }

  /**
   * A checkout paid after its customer was deleted: the subscription it started at Stripe would bill a
   * person who asked to be erased, and no retry can apply it. It is canceled at Stripe (with an
   * idempotency key of its own, so every notification of it cancels it at most once), the event is
   * recorded as processed so Stripe stops sending it, and nothing of the customer is written back.
   */
  async #buyerDeleted(
    event: ProviderEvent,
    remote: ProviderSubscription,
    gone: BuyerDeleted,
  ): Promise<{ applied: boolean }> {
    // At Stripe first: if that fails the event is not recorded, answers 500, and Stripe retries it.
    let canceled = !(await this.#endedAtStripe(remote.id));
    if (canceled) {
      try {
        await this.payments.cancelSubscription(remote.id, `tollgate-deleted-buyer-${remote.id}`);
      } catch (error) {
        // Ended meanwhile by another path (Stripe refuses to cancel a canceled subscription): done.
        if (!(await this.#endedAtStripe(remote.id))) throw error;
        canceled = false;
      }
    }
    const recorded = await this.orm.em.transactional((em) => markProcessed(em, event));
    if (recorded) {
      // One warning for the cancellation; a later notice of the same subscription (already ended) is info.
      this.logger?.[canceled ? 'warn' : 'info'](
        {
          eventId: event.id,
          eventType: event.type,
          appId: gone.appId,
          customerId: gone.customerId,
          stripeSubscriptionId: remote.id,
          canceledAtStripe: canceled,
        },
        canceled
          ? 'stripe notification: checkout paid after its customer was deleted; subscription canceled at Stripe, not imported'
          : 'stripe notification: subscription of a deleted customer, already ended at Stripe; not imported',
      );
    }
    return { applied: false };
  }

  /** Whether the subscription no longer runs at Stripe (its current state, not the event's). */
  async #endedAtStripe(id: string): Promise<boolean> {
    const current = await this.payments.retrieveSubscription(id);
    return !current || hasEnded(current.status);
  }

  async #importNew(
    event: ProviderEvent,
    remote: ProviderSubscription,
    tracking: CheckoutTracking | null,
    buyer: { readonly email: string | null; readonly name: string | null } | null,
  ): Promise<{ applied: boolean }> {
    return this.orm.em.transactional(async (em) => {
      if (!(await markProcessed(em, event))) return { applied: false };
      let owner: SubscriptionOwner;
      let plan: Plan | null;
      if (tracking) {
        // Made by a checkout of another Tollgate sharing the Stripe account: none of this one's business.
        if (!(await em.findOne(App, { id: tracking.appId }))) return { applied: false };
        const tracked = await this.#trackedAppAndPlan(em, tracking, `subscription ${remote.id}`);
        const details = { customerEmail: buyer?.email ?? null, customerName: buyer?.name ?? null };
        owner = await this.#owner(em, tracked.app, tracking.buyer, details, remote);
        plan = tracked.plan;
      } else {
        const linked = await linkedOwner(em, remote.customerId);
        if (!linked) return { applied: false };
        owner = linked;
        plan = await planForPrices(em, owner.appId, remote.priceIds);
        if (!plan) {
          return {
            applied: this.#imported(event, { kind: 'skipped', skipped: unmatchedPrice(remote) }, owner),
          };
        }
      }
      const outcome = await importSubscription(em, {
        owner,
        plan,
        remote,
        metadata: decodeCallerMetadata(remote.metadata),
        asOf: event.created,
        events: this.events,
        cause: 'notification',
        existing: 'leave',
      });
      if (outcome.kind === 'existing') throw new RowAppeared();
      return { applied: this.#imported(event, outcome, owner) };
    });
  }

  /** Logs what an import did; true when the row was written. */
  #imported(event: ProviderEvent, outcome: ImportOutcome, owner?: SubscriptionOwner): boolean {
    if (outcome.kind === 'skipped') {
      this.logger?.warn(
        { eventId: event.id, eventType: event.type, appId: owner?.appId, ...outcome.skipped },
        'stripe notification: subscription not imported',
      );
      return false;
    }
    if (outcome.kind === 'created') {
      this.logger?.info(
        {
          eventId: event.id,
          eventType: event.type,
          subscriptionId: outcome.subscription.id,
          stripeSubscriptionId: outcome.subscription.stripeSubscriptionId,
        },
        'stripe notification: subscription imported',
      );
    }
    return outcome.kind !== 'unchanged';
  }

  /** Who the new subscription belongs to; a checkout by e-mail creates the customer or links the existing one. */
  async #owner(
    em: EntityManager,
    app: App,
    buyer: CheckoutBuyer,
    session: Pick<ProviderCheckoutSession, 'customerEmail' | 'customerName'>,
    remote: ProviderSubscription,
  ): Promise<SubscriptionOwner> {
    if ('organizationId' in buyer) {
      const organization = await em.findOne(Organization, { id: buyer.organizationId, app: app.id });
      if (!organization)
        throw new NotificationNotApplicable(`organization ${buyer.organizationId} does not exist`);
      organization.paymentCustomerId ??= remote.customerId;
      return { appId: app.id, organizationId: organization.id };
    }
    let customer: Customer | null;
    if ('customerId' in buyer) {
      customer = await em.findOne(Customer, { id: buyer.customerId, app: app.id });
      if (!customer) throw new BuyerDeleted(app.id, buyer.customerId);
    } else {
      const email = session.customerEmail ?? buyer.email;
      customer = await this.customers.findOrCreateByEmail(em, app.id, email, { name: session.customerName });
      // Created first by another notification of the checkout without a name: the checkout's completes it.
      if (session.customerName && customer.name === null) customer.name = session.customerName;
    }
    await this.customers.linkPaymentCustomer(em, customer, remote.customerId);
    return { appId: app.id, customerId: customer.id };
  }

  async #subscriptionChanged(
    event: ProviderEvent,
    remote: ProviderSubscription,
    queued = false,
  ): Promise<{ applied: boolean }> {
    // The common case (a newer event with its outbound events and MRR movements, or a duplicate) in one
    // statement; one whose MRR count needs the row (a discount named by id only) in two (read it, then
    // make it with its movements and events, if the row has not changed meanwhile); events of one
    // second, events that keep losing that race, and MRR changes that need Stripe's coupon terms, under
    // the row lock.
    for (let tries = 0; tries < this.optimisticTries; tries++) {
      const outcome = await applyNewerProviderEvent(this.#statements, event, remote, new Date());
      switch (outcome.kind) {
        case 'unknown':
          return this.#importUnknown(event, remote);
        case 'applied':
          this.events.announce(outcome.deliveryIds);
          this.#recorded.add(event.id);
          return { applied: true };
        case 'skipped':
          this.#recorded.add(event.id);
          return { applied: false };
        case 'raced':
          continue;
        case 'same_second':
          return this.#underRowLock(event, remote);
        case 'mrr_changes':
          // Made in a transaction, which records its MRR movement (with coupon terms read from Stripe). A
          // storm of deliveries for one subscription queues here, holding no connection, rather than at
          // the row lock, holding one each: when its turn comes, an event the first one made current
          // takes the one-statement path.
          if (!queued)
            return this.#oneAtATime(remote.id, () => this.#subscriptionChanged(event, remote, true));
          return this.#underRowLock(event, await this.#withCoupons(remote));
        case 'record_events':
          if (await this.events.applyProviderChange(this.#statements, event, outcome.change)) {
            this.#recorded.add(event.id);
            return { applied: true };
          }
      }
    }
    // Changed under it every time (a storm of deliveries for one subscription): waiting for the row lock
    // is certain to make progress where another optimistic try is not.
    return this.#underRowLock(event, remote);
  }

  /** Runs `fn` after every earlier call for the same key (in this process) has settled. */
  async #oneAtATime<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.#queues.get(key) === tail) this.#queues.delete(key);
    }
  }

  /**
   * A notification's subscription with its coupons' terms, which its MRR needs and a notification gives by
   * id only: read from Stripe (outside any transaction) when it has a discount.
   */
  async #withCoupons(remote: ProviderSubscription): Promise<ProviderSubscription> {
    if (remote.discounts.every((d) => d.coupon !== null)) return remote;
    const current = await this.payments.retrieveSubscription(remote.id);
    if (!current) return remote;
    const terms = new Map(current.discounts.map((d) => [d.id, d.coupon]));
    return {
      ...remote,
      discounts: remote.discounts.map((d) => ({ id: d.id, coupon: terms.get(d.id) ?? null })),
    };
  }

  /**
   * An event applied in a transaction under the subscription's row lock: one of the subscription's newest
   * second, or one whose optimistic tries all lost to concurrent changes.
   */
  async #underRowLock(event: ProviderEvent, remote: ProviderSubscription): Promise<{ applied: boolean }> {
    return this.orm.em.transactional(async (em) => {
      // The row lock first, then the id: the order the single statement takes them in, so the two paths
      // never wait for each other in a cycle.
      const subscription = await em.findOne(
        Subscription,
        { stripeSubscriptionId: remote.id },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!(await markProcessed(em, event))) return { applied: false };
      // Gone since the first look (deleted meanwhile): nothing left to apply the event to.
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
      const change = await this.events.begin(em, ownerOf(subscription), subscription, 'notification');
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

/**
 * The customer or organization whose Stripe customer this is (a subscription made outside Tollgate's
 * checkout, e.g. in Stripe's dashboard, for a customer Tollgate linked), or null.
 */
async function linkedOwner(em: EntityManager, stripeCustomerId: string): Promise<SubscriptionOwner | null> {
  const customer = await em.findOne(
    Customer,
    { paymentCustomerId: stripeCustomerId },
    { orderBy: { createdAt: 'asc' } },
  );
  if (customer) return { appId: customer.app.id, customerId: customer.id };
  const organization = await em.findOne(
    Organization,
    { paymentCustomerId: stripeCustomerId },
    { orderBy: { createdAt: 'asc' } },
  );
  return organization ? { appId: organization.app.id, organizationId: organization.id } : null;
}
