import { customerOrFail } from './customers.js';
import { invalid } from './errors.js';
import { newInvoice, newProrationInvoice } from './invoices.js';
import { changedAttributes, DAY, now, periodEnd, randomId } from './objects.js';
import { allow, arr, bool, int, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
import { priceOrFail } from './prices.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/** `/v1/subscriptions`: made by paying a checkout session, changed and canceled by the API, renewed on request. */

/** The subscription a paid checkout session starts: trialing when the session grants trial days. */
export function newSubscription(
  em: Emulation,
  session: Obj,
  customerId: string,
  paymentMethod: string | null,
): Obj {
  return buildSubscription(em, {
    customerId,
    price: em.state.prices[session._line.price]!,
    quantity: session._line.quantity,
    trialDays: session._subscription_data.trial_period_days,
    metadata: session._subscription_data.metadata,
    missingPaymentMethod: session._subscription_data.missing_payment_method,
    paymentMethod,
    discounted: session.discounts.length > 0,
  });
}

interface NewSubscription {
  readonly customerId: string;
  readonly price: Obj;
  readonly quantity: number;
  readonly trialDays: number;
  readonly metadata: Obj;
  readonly missingPaymentMethod: string;
  readonly paymentMethod: string | null;
  readonly discounted: boolean;
}

function buildSubscription(em: Emulation, input: NewSubscription): Obj {
  const created = now();
  const { price, trialDays } = input;
  const trialEnd = trialDays > 0 ? created + trialDays * DAY : null;
  const firstPeriodEnd = trialEnd ?? periodEnd(price, created);
  const id = randomId('sub_', 24);
  const subscription: Obj = {
    id,
    object: 'subscription',
    application: null,
    billing_cycle_anchor: firstPeriodEnd,
    cancel_at: null,
    cancel_at_period_end: false,
    canceled_at: null,
    cancellation_details: { comment: null, feedback: null, reason: null },
    collection_method: 'charge_automatically',
    created,
    currency: price.currency,
    customer: input.customerId,
    days_until_due: null,
    default_payment_method: input.paymentMethod,
    description: null,
    discounts: input.discounted ? [randomId('di_', 24)] : [],
    ended_at: null,
    items: {
      object: 'list',
      data: [
        {
          id: randomId('si_', 14),
          object: 'subscription_item',
          created,
          current_period_end: firstPeriodEnd,
          current_period_start: created,
          discounts: [],
          metadata: {},
          price,
          quantity: input.quantity,
          subscription: id,
          tax_rates: [],
        },
      ],
      has_more: false,
      total_count: 1,
      url: `/v1/subscription_items?subscription=${id}`,
    },
    latest_invoice: null,
    livemode: false,
    metadata: { ...input.metadata },
    pause_collection: null,
    start_date: created,
    status: trialEnd ? 'trialing' : 'active',
    test_clock: null,
    trial_end: trialEnd,
    trial_settings: { end_behavior: { missing_payment_method: input.missingPaymentMethod } },
    trial_start: trialEnd ? created : null,
  };
  em.state.subscriptions[id] = subscription;
  return subscription;
}

/**
 * `POST /v1/subscriptions` (one item), as made in Stripe's dashboard or by a script: charged at once
 * from the customer's default payment method, or trialing with `trial_period_days`.
 */
export function createSubscription(em: Emulation, params: Params): Obj {
  allow(params, [
    'customer',
    'items',
    'metadata',
    'trial_period_days',
    'default_payment_method',
    'description',
    'collection_method',
    'payment_behavior',
  ]);
  const customer = customerOrFail(em, str(params, 'customer', true)!, 'customer');
  const items = arr(params, 'items');
  if (items.length !== 1) throw invalid('The Stripe emulator supports exactly one item.', 'items');
  const price = priceOrFail(em, str(items[0]!, 'price', true)!, 'items[0][price]');
  if (!price.recurring) throw invalid('The price must be recurring.', 'items[0][price]');
  const trialDays = int(params, 'trial_period_days') ?? 0;
  if (trialDays < 0 || trialDays > 730) throw invalid('Invalid trial_period_days', 'trial_period_days');
  const paymentMethod =
    str(params, 'default_payment_method') ?? customer.invoice_settings.default_payment_method ?? null;
  const subscription = buildSubscription(em, {
    customerId: customer.id,
    price,
    quantity: int(items[0]!, 'quantity') ?? 1,
    trialDays,
    metadata: mergeMetadata({}, params),
    missingPaymentMethod: 'create_invoice',
    paymentMethod,
    discounted: false,
  });
  subscription.description = str(params, 'description') ?? null;
  const invoice = newInvoice(em, subscription, 'subscription_create', null);
  subscription.latest_invoice = invoice.id;
  em.emit('customer.subscription.created', subscription);
  em.emit('invoice.created', invoice);
  em.emit('invoice.finalized', invoice);
  em.emit('invoice.paid', invoice);
  return subscription;
}

export function subscriptionOrFail(em: Emulation, id: string): Obj {
  return findOrFail('subscription', em.state.subscriptions, id);
}

export function listSubscriptions(em: Emulation, params: Params): Obj {
  allow(params, ['customer', 'status', 'price', 'limit', 'starting_after']);
  const customer = str(params, 'customer');
  const status = str(params, 'status');
  const price = str(params, 'price');
  const items = Object.values(em.state.subscriptions).filter(
    (s) =>
      (customer === undefined || s.customer === customer) &&
      (price === undefined || s.items.data[0].price.id === price) &&
      // Like Stripe: without a status filter, canceled subscriptions are left out; `all` includes them.
      (status === 'all' || (status === undefined ? s.status !== 'canceled' : s.status === status)),
  );
  return listPage('/v1/subscriptions', items, params);
}

export function updateSubscription(em: Emulation, id: string, params: Params): Obj {
  allow(params, [
    'cancel_at_period_end',
    'pause_collection',
    'metadata',
    'trial_end',
    'items',
    'default_payment_method',
    'proration_behavior',
    'description',
  ]);
  const subscription = subscriptionOrFail(em, id);
  const before = structuredClone(subscription);
  if (subscription.status === 'canceled') {
    throw invalid('A canceled subscription can only update its cancellation_details and metadata.');
  }
  const cancelAtPeriodEnd = bool(params, 'cancel_at_period_end');
  if (cancelAtPeriodEnd !== undefined) {
    subscription.cancel_at_period_end = cancelAtPeriodEnd;
    subscription.cancel_at = cancelAtPeriodEnd ? subscription.items.data[0].current_period_end : null;
    subscription.canceled_at = cancelAtPeriodEnd ? now() : null;
  }
  if (params.pause_collection === '') {
    subscription.pause_collection = null;
  } else if (params.pause_collection !== undefined) {
    const pause = obj(params, 'pause_collection')!;
    const behavior = str(pause, 'behavior', true)!;
    if (!['keep_as_draft', 'mark_uncollectible', 'void'].includes(behavior)) {
      throw invalid('Invalid pause_collection[behavior]', 'pause_collection[behavior]');
    }
    subscription.pause_collection = { behavior, resumes_at: int(pause, 'resumes_at') ?? null };
  }
  const trialEnd = str(params, 'trial_end');
  if (trialEnd === 'now' && subscription.status === 'trialing') {
    const item = subscription.items.data[0];
    const start = now();
    subscription.trial_end = start;
    subscription.status = 'active';
    item.current_period_start = start;
    item.current_period_end = periodEnd(item.price, start);
  } else if (trialEnd !== undefined && trialEnd !== 'now') {
    const end = int(params, 'trial_end')!;
    subscription.trial_end = end;
    subscription.items.data[0].current_period_end = end;
    if (end > now()) subscription.status = 'trialing';
  }
  const prorationBehavior = str(params, 'proration_behavior') ?? 'create_prorations';
  if (!PRORATION_BEHAVIORS.includes(prorationBehavior)) {
    throw invalid('Invalid proration_behavior', 'proration_behavior');
  }
  const items = arr(params, 'items');
  let priceChanged: { from: Obj; to: Obj } | null = null;
  if (items.length > 0) {
    const item = subscription.items.data[0];
    const itemId = str(items[0]!, 'id');
    if (itemId !== undefined && itemId !== item.id) {
      throw invalid(`No such subscription item: '${itemId}'`, 'items[0][id]');
    }
    const priceId = str(items[0]!, 'price');
    if (priceId && priceId !== item.price.id) {
      const price = priceOrFail(em, priceId, 'items[0][price]');
      if (!price.recurring || price.recurring.interval !== item.price.recurring.interval) {
        throw invalid('The new price must recur at the same interval as the current one.', 'items[0][price]');
      }
      priceChanged = { from: item.price, to: price };
      item.price = price;
    }
  }
  const paymentMethod = str(params, 'default_payment_method');
  if (paymentMethod) subscription.default_payment_method = paymentMethod;
  const description = str(params, 'description');
  if (description !== undefined) subscription.description = description;
  subscription.metadata = mergeMetadata(subscription.metadata, params);
  // `always_invoice` bills the proration at once; `create_prorations` leaves it for the next invoice.
  const invoice =
    priceChanged && prorationBehavior === 'always_invoice' && subscription.status !== 'trialing'
      ? newProrationInvoice(
          em,
          subscription,
          prorationAmount(subscription, priceChanged.from, priceChanged.to),
        )
      : null;
  if (invoice) subscription.latest_invoice = invoice.id;
  em.emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
  if (invoice) {
    em.emit('invoice.created', invoice);
    em.emit('invoice.finalized', invoice);
    em.emit('invoice.paid', invoice);
  }
  return subscription;
}

export const PRORATION_BEHAVIORS = ['create_prorations', 'none', 'always_invoice'];

/**
 * What moving from `from` to `to` for the rest of the current period costs (negative: a credit), by the
 * share of the period left, rounded to the currency's minor unit as Stripe does.
 */
export function prorationAmount(subscription: Obj, from: Obj, to: Obj): number {
  if (subscription.status === 'trialing') return 0;
  const item = subscription.items.data[0];
  const length = item.current_period_end - item.current_period_start;
  const left = Math.max(0, item.current_period_end - now());
  const share = length > 0 ? left / length : 0;
  const quantity: number = item.quantity;
  return Math.round((to.unit_amount - from.unit_amount) * quantity * share);
}

export function cancelSubscription(em: Emulation, id: string, params: Params): Obj {
  allow(params, ['invoice_now', 'prorate', 'cancellation_details']);
  const subscription = subscriptionOrFail(em, id);
  if (subscription.status === 'canceled') throw invalid(`No such subscription: '${id}'`);
  const at = now();
  subscription.status = 'canceled';
  subscription.canceled_at = at;
  subscription.ended_at = at;
  subscription.cancel_at = null;
  subscription.cancel_at_period_end = false;
  subscription.cancellation_details = { comment: null, feedback: null, reason: 'cancellation_requested' };
  em.emit('customer.subscription.deleted', subscription);
  return subscription;
}

/**
 * Ends a subscription's current period (or trial) now, as Stripe's clock would: the next invoice is
 * charged (`fail: true` declines it, leaving the subscription `past_due`), or a trial without a card
 * whose settings say so is canceled. Time does not pass in the emulator on its own; this stands in.
 */
export function renewSubscription(em: Emulation, id: string, options: { readonly fail?: boolean }): Obj {
  const subscription = subscriptionOrFail(em, id);
  if (subscription.status === 'canceled') throw invalid('A canceled subscription cannot be renewed.');
  const before = structuredClone(subscription);
  const item = subscription.items.data[0];
  const start = now();
  const trialing = subscription.status === 'trialing';
  if (
    trialing &&
    !subscription.default_payment_method &&
    subscription.trial_settings?.end_behavior?.missing_payment_method === 'cancel'
  ) {
    Object.assign(subscription, {
      status: 'canceled',
      trial_end: start,
      canceled_at: start,
      ended_at: start,
      cancellation_details: { comment: null, feedback: null, reason: 'cancellation_requested' },
    });
    em.emit('customer.subscription.deleted', subscription);
    return subscription;
  }
  if (trialing) subscription.trial_end = start;
  item.current_period_start = start;
  item.current_period_end = periodEnd(item.price, start);
  subscription.status = options.fail ? 'past_due' : 'active';
  const invoice = newInvoice(em, subscription, 'subscription_cycle', null);
  if (options.fail) {
    Object.assign(invoice, {
      status: 'open',
      amount_paid: 0,
      amount_remaining: invoice.amount_due,
      status_transitions: { ...invoice.status_transitions, paid_at: null },
    });
  }
  subscription.latest_invoice = invoice.id;
  em.emit('invoice.created', invoice);
  em.emit('invoice.finalized', invoice);
  em.emit(options.fail ? 'invoice.payment_failed' : 'invoice.paid', invoice);
  em.emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
  return subscription;
}

/**
 * A new default card for a subscription, as the customer portal sets it: a subscription left `past_due`
 * or `unpaid` by a declined renewal has its open invoices paid with the card and becomes `active` again.
 */
export function replacePaymentMethod(em: Emulation, id: string, paymentMethod: string): Obj {
  const subscription = subscriptionOrFail(em, id);
  const before = structuredClone(subscription);
  subscription.default_payment_method = paymentMethod;
  const paid: Obj[] = [];
  if (subscription.status === 'past_due' || subscription.status === 'unpaid') {
    const at = now();
    for (const invoice of Object.values(em.state.invoices)) {
      if (invoice.status !== 'open' || invoice.parent?.subscription_details?.subscription !== id) continue;
      Object.assign(invoice, {
        status: 'paid',
        amount_paid: invoice.amount_due,
        amount_remaining: 0,
        attempt_count: invoice.attempt_count + 1,
        status_transitions: { ...invoice.status_transitions, paid_at: at },
      });
      paid.push(invoice);
    }
    subscription.status = 'active';
  }
  for (const invoice of paid) em.emit('invoice.paid', invoice);
  em.emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
  return subscription;
}
