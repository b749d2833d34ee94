import { couponOrFail, promotionCodeOrFail } from './coupons.js';
import { customerOrFail } from './customers.js';
import { invalid, missing } from './errors.js';
import { type LineInput, newInvoice } from './invoices.js';
import { changedAttributes, DAY, now, periodEnd, randomId } from './objects.js';
import { allow, arr, bool, int, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
import { priceOrFail } from './prices.js';
import { searchPage } from './search.js';
import { type Emulation, findOrFail, listPage } from './state.js';
import {
  addPendingProrations,
  applyItemChanges,
  checkItems,
  type ItemInput,
  newItem,
  pendingLines,
  periodLines,
  prorationLines,
  usageLines,
} from './subscription-items.js';

/**
 * `/v1/subscriptions`: made by paying a checkout session or by the API, with one or several items
 * (licensed items billed in advance for their quantity, metered items billed in arrears for the usage
 * their meter counted), changed with prorations, canceled, and renewed on request.
 */

interface NewSubscription {
  readonly customerId: string;
  readonly items: readonly ItemInput[];
  readonly trialDays: number;
  readonly metadata: Obj;
  readonly missingPaymentMethod: string;
  readonly paymentMethod: string | null;
  /** Coupons applied, as `{ coupon }` or `{ promotion_code }`. */
  readonly discounts: readonly Obj[];
}

/** The subscription a paid checkout session starts: trialing when the session grants trial days. */
export function newSubscription(
  em: Emulation,
  session: Obj,
  customerId: string,
  paymentMethod: string | null,
): Obj {
  const lines: Obj[] = session._lines ?? [session._line];
  return buildSubscription(em, {
    customerId,
    items: lines.map((line) => ({
      price: em.state.prices[line.price]!,
      quantity: line.quantity,
      metadata: {},
    })),
    trialDays: session._subscription_data.trial_period_days,
    metadata: session._subscription_data.metadata,
    missingPaymentMethod: session._subscription_data.missing_payment_method,
    paymentMethod,
    discounts: session.discounts,
  });
}

/** Discount objects (`di_…`) for coupons applied to a subscription, kept; returns their ids. */
function applyDiscounts(
  em: Emulation,
  subscription: Obj,
  discounts: readonly Obj[],
  start: number,
): string[] {
  return newDiscounts(em, subscription, discounts, start).map((discount) => {
    em.state.discounts[discount.id] = discount;
    return discount.id;
  });
}

/** Discount objects for `{ coupon }` / `{ promotion_code }` entries (checked), not kept. */
export function newDiscounts(
  em: Emulation,
  subscription: Obj,
  discounts: readonly Obj[],
  start: number,
): Obj[] {
  return discounts.map((d) => {
    const promotionCode = d.promotion_code ? em.state.promotionCodes[d.promotion_code] : undefined;
    const couponId: string = d.coupon ?? promotionCode?.promotion.coupon;
    const coupon = em.state.coupons[couponId]!;
    const discount: Obj = {
      id: randomId('di_', 24),
      object: 'discount',
      checkout_session: null,
      customer: subscription.customer,
      customer_account: null,
      end:
        coupon.duration === 'repeating' && coupon.duration_in_months
          ? start + coupon.duration_in_months * 30 * DAY
          : null,
      invoice: null,
      invoice_item: null,
      promotion_code: promotionCode?.id ?? null,
      source: { coupon: couponId, type: 'coupon' },
      start,
      subscription: subscription.id,
      subscription_item: null,
    };
    return discount;
  });
}

function buildSubscription(em: Emulation, input: NewSubscription): Obj {
  const subscription = draftSubscription(input);
  subscription.discounts = applyDiscounts(em, subscription, input.discounts, subscription.created);
  em.state.subscriptions[subscription.id] = subscription;
  return subscription;
}

/** A new subscription as it would be, not kept (its `discounts` still to be applied). */
function draftSubscription(input: NewSubscription): Obj {
  const created = now();
  const { trialDays } = input;
  const firstPrice = input.items[0]!.price;
  const trialEnd = trialDays > 0 ? created + trialDays * DAY : null;
  const firstPeriodEnd = trialEnd ?? periodEnd(firstPrice, created);
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
    currency: firstPrice.currency,
    customer: input.customerId,
    days_until_due: null,
    default_payment_method: input.paymentMethod,
    description: null,
    discounts: [],
    ended_at: null,
    items: {
      object: 'list',
      data: [],
      has_more: false,
      total_count: 0,
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
  subscription.items.data = input.items.map((item) => newItem(subscription, item, created, firstPeriodEnd));
  subscription.items.total_count = subscription.items.data.length;
  return subscription;
}

/**
 * What `subscriptions.create` of `items` (named `param` in errors) for a customer would be, for an
 * invoice preview of a new subscription: nothing is kept.
 */
export function previewNewSubscription(
  em: Emulation,
  customerId: string,
  entries: Params[],
  param: string,
): Obj {
  const items = entries.map((item, i) => {
    allow(item, ['price', 'quantity', 'metadata']);
    return {
      price: priceOrFail(em, str(item, 'price', true)!, `${param}[${i}][price]`),
      quantity: int(item, 'quantity'),
      metadata: {},
    };
  });
  checkItems(items, param);
  return draftSubscription({
    customerId,
    items,
    trialDays: 0,
    metadata: {},
    missingPaymentMethod: 'create_invoice',
    paymentMethod: null,
    discounts: [],
  });
}

/** The discounts a request names (`discounts[n][coupon]` or `[promotion_code]`), checked. */
export function readDiscounts(em: Emulation, params: Params): Obj[] {
  return arr(params, 'discounts').map((d, i) => {
    const couponId = str(d, 'coupon');
    const promotionCodeId = str(d, 'promotion_code');
    if (promotionCodeId) {
      const code = promotionCodeOrFail(em, promotionCodeId, `discounts[${i}][promotion_code]`);
      if (!code.active)
        throw invalid(
          `The promotion code \`${code.code}\` is not active.`,
          `discounts[${i}][promotion_code]`,
        );
      return { coupon: null, promotion_code: promotionCodeId };
    }
    if (!couponId) throw invalid('Missing required param: coupon.', `discounts[${i}][coupon]`);
    const coupon = couponOrFail(em, couponId, `discounts[${i}][coupon]`);
    if (!coupon.valid)
      throw invalid(`The coupon \`${couponId}\` is no longer valid.`, `discounts[${i}][coupon]`);
    return { coupon: couponId, promotion_code: null };
  });
}

function readItems(em: Emulation, params: Params): ItemInput[] {
  return arr(params, 'items').map((item, i) => {
    allow(item, ['price', 'quantity', 'metadata']);
    return {
      price: priceOrFail(em, str(item, 'price', true)!, `items[${i}][price]`),
      quantity: int(item, 'quantity'),
      metadata: mergeMetadata({}, item),
    };
  });
}

/**
 * `POST /v1/subscriptions`, as made by a script or a server: charged at once from the customer's
 * default payment method, trialing with `trial_period_days`, or, with `payment_behavior=default_incomplete`
 * and no payment method to charge, `incomplete` with its first invoice left open.
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
    'proration_behavior',
    'discounts',
    'off_session',
  ]);
  const customer = customerOrFail(em, str(params, 'customer', true)!, 'customer');
  const items = readItems(em, params);
  checkItems(items, 'items');
  const trialDays = int(params, 'trial_period_days') ?? 0;
  if (trialDays < 0 || trialDays > 730) throw invalid('Invalid trial_period_days', 'trial_period_days');
  const paymentBehavior = str(params, 'payment_behavior') ?? 'allow_incomplete';
  if (
    !['allow_incomplete', 'default_incomplete', 'error_if_incomplete', 'pending_if_incomplete'].includes(
      paymentBehavior,
    )
  )
    throw invalid('Invalid payment_behavior', 'payment_behavior');
  const paymentMethod =
    str(params, 'default_payment_method') ?? customer.invoice_settings.default_payment_method ?? null;
  const subscription = buildSubscription(em, {
    customerId: customer.id,
    items,
    trialDays,
    metadata: mergeMetadata({}, params),
    missingPaymentMethod: 'create_invoice',
    paymentMethod,
    discounts: readDiscounts(em, params),
  });
  subscription.description = str(params, 'description') ?? null;
  const lines = periodLines(subscription, subscription.created);
  const owed = subscription.status !== 'trialing' && lines.some((l) => l.amount > 0);
  const awaitsPayment = owed && !paymentMethod && paymentBehavior === 'default_incomplete';
  if (awaitsPayment) subscription.status = 'incomplete';
  const invoice = newInvoice(em, subscription, 'subscription_create', lines, {
    status: awaitsPayment ? 'open' : 'paid',
  });
  subscription.latest_invoice = invoice.id;
  em.emit('customer.subscription.created', subscription);
  em.emit('invoice.created', invoice);
  em.emit('invoice.finalized', invoice);
  if (!awaitsPayment) em.emit('invoice.paid', invoice);
  return subscription;
}

export function subscriptionOrFail(em: Emulation, id: string): Obj {
  return findOrFail('subscription', em.state.subscriptions, id);
}

export function listSubscriptions(em: Emulation, params: Params): Obj {
  allow(params, ['customer', 'status', 'price', 'created', 'limit', 'starting_after', 'ending_before']);
  const customer = str(params, 'customer');
  const status = str(params, 'status');
  const price = str(params, 'price');
  const items = Object.values(em.state.subscriptions).filter(
    (s) =>
      (customer === undefined || s.customer === customer) &&
      (price === undefined || s.items.data.some((item: Obj) => item.price.id === price)) &&
      // Like Stripe: without a status filter, canceled subscriptions are left out; `all` includes them.
      (status === 'all' || (status === undefined ? s.status !== 'canceled' : s.status === status)),
  );
  return listPage('/v1/subscriptions', items, params);
}

/** `GET /v1/subscriptions/search`. */
export function searchSubscriptions(em: Emulation, params: Params): Obj {
  return searchPage(
    '/v1/subscriptions/search',
    'subscriptions',
    ['status', 'customer', 'metadata', 'created'],
    Object.values(em.state.subscriptions),
    params,
  );
}

export const PRORATION_BEHAVIORS = ['create_prorations', 'none', 'always_invoice'];

export function updateSubscription(em: Emulation, id: string, params: Params): Obj {
  allow(params, [
    'cancel_at_period_end',
    'pause_collection',
    'metadata',
    'trial_end',
    'items',
    'default_payment_method',
    'proration_behavior',
    'proration_date',
    'description',
    'discounts',
    'payment_behavior',
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
    const start = now();
    subscription.trial_end = start;
    subscription.status = 'active';
    for (const item of subscription.items.data) {
      item.current_period_start = start;
      item.current_period_end = periodEnd(item.price, start);
    }
  } else if (trialEnd !== undefined && trialEnd !== 'now') {
    const end = int(params, 'trial_end')!;
    subscription.trial_end = end;
    for (const item of subscription.items.data) item.current_period_end = end;
    if (end > now()) subscription.status = 'trialing';
  }
  const prorationBehavior = str(params, 'proration_behavior') ?? 'create_prorations';
  if (!PRORATION_BEHAVIORS.includes(prorationBehavior)) {
    throw invalid('Invalid proration_behavior', 'proration_behavior');
  }
  const at = int(params, 'proration_date') ?? now();
  const entries = arr(params, 'items');
  let prorations: LineInput[] = [];
  if (entries.length > 0) {
    const { items, changes } = applyItemChanges(em, subscription, entries, 'items');
    subscription.items.data = items;
    subscription.items.total_count = items.length;
    prorations = prorationBehavior === 'none' ? [] : prorationLines(subscription, changes, at);
  }
  if (params.discounts !== undefined) {
    subscription.discounts =
      params.discounts === '' ? [] : applyDiscounts(em, subscription, readDiscounts(em, params), now());
  }
  const paymentMethod = str(params, 'default_payment_method');
  if (paymentMethod) subscription.default_payment_method = paymentMethod;
  const description = str(params, 'description');
  if (description !== undefined) subscription.description = description;
  subscription.metadata = mergeMetadata(subscription.metadata, params);
  // `always_invoice` bills the prorations at once; `create_prorations` leaves them for the next invoice.
  let invoice: Obj | null = null;
  if (prorations.length > 0 && prorationBehavior === 'always_invoice') {
    invoice = newInvoice(em, subscription, 'subscription_update', [
      ...pendingLines(em, subscription, true),
      ...prorations,
    ]);
    subscription.latest_invoice = invoice.id;
  } else if (prorations.length > 0) {
    addPendingProrations(em, subscription, prorations);
  }
  em.emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
  if (invoice) {
    em.emit('invoice.created', invoice);
    em.emit('invoice.finalized', invoice);
    em.emit('invoice.paid', invoice);
  }
  return subscription;
}

/** Cancels a subscription now (the API's cancel, a deleted customer). */
export function endSubscription(em: Emulation, subscription: Obj): void {
  const at = now();
  subscription.status = 'canceled';
  subscription.canceled_at = at;
  subscription.ended_at = at;
  subscription.cancel_at = null;
  subscription.cancel_at_period_end = false;
  subscription.cancellation_details = { comment: null, feedback: null, reason: 'cancellation_requested' };
  em.emit('customer.subscription.deleted', subscription);
}

export function cancelSubscription(em: Emulation, id: string, params: Params): Obj {
  allow(params, ['invoice_now', 'prorate', 'cancellation_details']);
  const subscription = subscriptionOrFail(em, id);
  if (subscription.status === 'canceled') throw missing('subscription', id);
  endSubscription(em, subscription);
  return subscription;
}

/**
 * Ends a subscription's current period (or trial) now, as Stripe's clock would: the next invoice bills
 * the metered usage of the period that ended, the pending prorations and the licensed items for the new
 * period, and is charged (`fail: true` declines it, leaving the subscription `past_due`); or a trial
 * without a card whose settings say so is canceled. Time does not pass in the emulator on its own.
 */
export function renewSubscription(em: Emulation, id: string, options: { readonly fail?: boolean }): Obj {
  const subscription = subscriptionOrFail(em, id);
  if (subscription.status === 'canceled') throw invalid('A canceled subscription cannot be renewed.');
  const before = structuredClone(subscription);
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
  const usage = usageLines(em, subscription, start, true);
  const pending = pendingLines(em, subscription, true);
  if (trialing) subscription.trial_end = start;
  subscription.status = options.fail ? 'past_due' : 'active';
  for (const item of subscription.items.data) {
    item.current_period_start = start;
    item.current_period_end = periodEnd(item.price, start);
  }
  const invoice = newInvoice(
    em,
    subscription,
    'subscription_cycle',
    [...usage, ...pending, ...periodLines(subscription, start)],
    { status: options.fail ? 'open' : 'paid' },
  );
  subscription.latest_invoice = invoice.id;
  em.emit('invoice.created', invoice);
  em.emit('invoice.finalized', invoice);
  em.emit(options.fail ? 'invoice.payment_failed' : 'invoice.paid', invoice);
  em.emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
  return subscription;
}

/**
 * A new default card for a subscription, as the customer portal sets it: a subscription left `past_due`,
 * `unpaid` or `incomplete` has its open invoices paid with the card and becomes `active` again.
 */
export function replacePaymentMethod(em: Emulation, id: string, paymentMethod: string): Obj {
  const subscription = subscriptionOrFail(em, id);
  const before = structuredClone(subscription);
  subscription.default_payment_method = paymentMethod;
  const paid: Obj[] = [];
  if (['past_due', 'unpaid', 'incomplete'].includes(subscription.status)) {
    const at = now();
    for (const invoice of Object.values(em.state.invoices)) {
      if (invoice.status !== 'open' || invoice.parent?.subscription_details?.subscription !== id) continue;
      Object.assign(invoice, {
        status: 'paid',
        amount_paid: invoice.amount_due,
        amount_remaining: 0,
        attempt_count: invoice.attempt_count + 1,
        attempted: true,
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
