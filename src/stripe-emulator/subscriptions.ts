import { couponOrFail, promotionCodeOrFail } from './coupons.js';
import { customerOrFail } from './customers.js';
import { invalid, missing } from './errors.js';
import { type LineInput, newInvoice } from './invoices.js';
import { aggregate, meterEventsFor } from './meters.js';
import { changedAttributes, DAY, now, periodEnd, randomId } from './objects.js';
import { allow, arr, bool, int, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
import { priceOrFail } from './prices.js';
import { searchPage } from './search.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/**
 * `/v1/subscriptions`: made by paying a checkout session or by the API, with one or several items
 * (licensed items billed in advance for their quantity, metered items billed in arrears for the usage
 * their meter counted), changed with prorations, canceled, and renewed on request.
 */

/** Stripe's limit on a subscription's items. */
const MAX_ITEMS = 20;

interface ItemInput {
  readonly price: Obj;
  readonly quantity: number | undefined;
  readonly metadata: Obj;
}

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

const isMetered = (price: Obj): boolean => price.recurring?.usage_type === 'metered';

function newItem(subscription: Obj, input: ItemInput, start: number, end: number): Obj {
  return {
    id: randomId('si_', 14),
    object: 'subscription_item',
    billing_thresholds: null,
    created: now(),
    current_period_end: end,
    current_period_start: start,
    discounts: [],
    metadata: { ...input.metadata },
    price: input.price,
    // A metered item has no quantity: its usage comes from the meter.
    ...(isMetered(input.price) ? {} : { quantity: input.quantity ?? 1 }),
    subscription: subscription.id,
    tax_rates: [],
  };
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

/** The items a new subscription may have: 1 to 20, recurring, one currency and interval, no price twice. */
function checkItems(items: readonly ItemInput[], param: string): void {
  if (items.length === 0) throw invalid(`Missing required param: ${param}.`, param);
  if (items.length > MAX_ITEMS) throw invalid(`A subscription can have at most ${MAX_ITEMS} items.`, param);
  const [first] = items as [ItemInput, ...ItemInput[]];
  items.forEach((item, i) => {
    const where = `${param}[${i}][price]`;
    if (!item.price.recurring) throw invalid('The price must be recurring.', where);
    if (!item.price.active) throw invalid(`The price \`${item.price.id}\` is not active.`, where);
    if (isMetered(item.price) && item.quantity !== undefined)
      throw invalid(
        `Quantity should not be specified where usage_type is \`metered\`. Remove quantity from \`${param}[${i}]\`.`,
        `${param}[${i}][quantity]`,
      );
    if (item.quantity !== undefined && item.quantity < 0)
      throw invalid('This value must be greater than or equal to 0.', `${param}[${i}][quantity]`);
    if (
      item.price.currency !== first.price.currency ||
      item.price.recurring.interval !== first.price.recurring.interval ||
      item.price.recurring.interval_count !== first.price.recurring.interval_count
    )
      throw invalid('Currency and interval fields must match across all plans on this subscription.', where);
    if (items.findIndex((other) => other.price.id === item.price.id) !== i)
      throw invalid('Cannot add multiple subscription items with the same price.', where);
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

/** The first invoice's lines: each licensed item for the first period (nothing is charged in a trial). */
export function periodLines(subscription: Obj, start: number): LineInput[] {
  const trialing = subscription.status === 'trialing';
  return (subscription.items.data as Obj[])
    .filter((item) => !isMetered(item.price))
    .map((item) => {
      const end = trialing
        ? (subscription.trial_end ?? item.current_period_end)
        : periodEnd(item.price, start);
      return {
        item,
        price: item.price,
        quantity: item.quantity,
        amount: trialing ? 0 : item.price.unit_amount * item.quantity,
        start,
        end,
        proration: false,
        description: trialing
          ? `Trial period for ${productName(item)}`
          : `${item.quantity} × ${productName(item)}`,
      };
    });
}

/** What a line names its item by (Stripe uses the product's name; the price's nickname or id here). */
const productName = (item: Obj): string => item.price.nickname ?? item.price.id;

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

/** What an `items[n]` entry of an update does to the subscription's items. */
export interface ItemChange {
  /** The item before, absent for an added one. */
  readonly before: Obj | null;
  /** The item after, absent for a deleted one. */
  readonly after: Obj | null;
}

/**
 * Applies `items[n]` (`id` to change or with `deleted` to remove; without `id`, a new item) to a copy
 * of the subscription's items; returns the new items and what changed. `param` names the array in errors.
 */
export function applyItemChanges(
  em: Emulation,
  subscription: Obj,
  entries: readonly Params[],
  param: string,
): { items: Obj[]; changes: ItemChange[] } {
  const items: Obj[] = structuredClone(subscription.items.data);
  const changes: ItemChange[] = [];
  const anyItem = subscription.items.data[0] as Obj;
  entries.forEach((entry, i) => {
    allow(entry, ['id', 'price', 'quantity', 'deleted', 'metadata', 'clear_usage']);
    const where = `${param}[${i}]`;
    const id = str(entry, 'id');
    const priceId = str(entry, 'price');
    const quantity = int(entry, 'quantity');
    const deleted = bool(entry, 'deleted') ?? false;
    const price = priceId ? priceOrFail(em, priceId, `${where}[price]`) : undefined;
    if (price) {
      if (!price.recurring) throw invalid('The price must be recurring.', `${where}[price]`);
      if (
        price.currency !== subscription.currency ||
        price.recurring.interval !== anyItem.price.recurring.interval ||
        price.recurring.interval_count !== anyItem.price.recurring.interval_count
      )
        throw invalid(
          'Currency and interval fields must match across all plans on this subscription.',
          `${where}[price]`,
        );
    }
    if (quantity !== undefined && quantity < 0)
      throw invalid('This value must be greater than or equal to 0.', `${where}[quantity]`);
    if (id === undefined) {
      if (deleted) throw invalid('Missing required param: id.', `${where}[id]`);
      if (!price) throw invalid('Missing required param: price.', `${where}[price]`);
      if (isMetered(price) && quantity !== undefined)
        throw invalid(
          `Quantity should not be specified where usage_type is \`metered\`. Remove quantity from \`${where}\`.`,
          `${where}[quantity]`,
        );
      const current = items[0] ?? anyItem;
      const added = newItem(
        subscription,
        { price, quantity, metadata: mergeMetadata({}, entry) },
        current.current_period_start,
        current.current_period_end,
      );
      items.push(added);
      changes.push({ before: null, after: added });
      return;
    }
    const index = items.findIndex((item) => item.id === id);
    if (index === -1) throw invalid(`No such subscription item: '${id}'`, `${where}[id]`);
    const before = items[index]!;
    if (deleted) {
      items.splice(index, 1);
      changes.push({ before, after: null });
      return;
    }
    const after: Obj = {
      ...before,
      price: price ?? before.price,
      metadata: mergeMetadata(before.metadata, entry),
    };
    if (isMetered(after.price)) {
      if (quantity !== undefined)
        throw invalid(
          `Quantity should not be specified where usage_type is \`metered\`. Remove quantity from \`${where}\`.`,
          `${where}[quantity]`,
        );
      delete after.quantity;
    } else {
      after.quantity = quantity ?? (isMetered(before.price) ? 1 : before.quantity);
    }
    items[index] = after;
    changes.push({ before, after });
  });
  if (items.length === 0) throw invalid('A subscription must have at least one item.', param);
  if (items.length > MAX_ITEMS) throw invalid(`A subscription can have at most ${MAX_ITEMS} items.`, param);
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(item.price.id))
      throw invalid('Cannot add multiple subscription items with the same price.', param);
    seen.add(item.price.id);
  }
  return { items, changes };
}

/**
 * The proration lines of item changes at `at`: for each changed licensed item, a credit for the unused
 * time of what it was and a charge for the rest of the period of what it is, by the share of the
 * period left, rounded to the currency's minor unit. None during a trial; none for metered items.
 */
export function prorationLines(subscription: Obj, changes: readonly ItemChange[], at: number): LineInput[] {
  if (subscription.status === 'trialing') return [];
  const lines: LineInput[] = [];
  for (const { before, after } of changes) {
    const item = (after ?? before)!;
    const start: number = item.current_period_start;
    const end: number = item.current_period_end;
    const share = end > start ? Math.max(0, end - at) / (end - start) : 0;
    const cost = (i: Obj | null) => (i && !isMetered(i.price) ? i.price.unit_amount * i.quantity : 0);
    if (before && after && cost(before) === cost(after) && before.price.id === after.price.id) continue;
    if (before && !isMetered(before.price) && cost(before) > 0) {
      lines.push({
        item,
        price: before.price,
        quantity: before.quantity,
        amount: -Math.round(cost(before) * share),
        start: at,
        end,
        proration: true,
        description: `Unused time on ${before.quantity} × ${productName(before)}`,
      });
    }
    if (after && !isMetered(after.price) && cost(after) > 0) {
      lines.push({
        item,
        price: after.price,
        quantity: after.quantity,
        amount: Math.round(cost(after) * share),
        start: at,
        end,
        proration: true,
        description: `Remaining time on ${after.quantity} × ${productName(after)}`,
      });
    }
  }
  return lines;
}

/** Prorations waiting for the subscription's next invoice (`create_prorations`), as pending invoice items. */
function addPendingProrations(em: Emulation, subscription: Obj, lines: readonly LineInput[]): void {
  for (const line of lines) {
    const id = randomId('ii_', 24);
    em.state.invoiceItems[id] = {
      id,
      object: 'invoiceitem',
      amount: line.amount,
      currency: subscription.currency,
      customer: subscription.customer,
      date: now(),
      description: line.description,
      discountable: false,
      invoice: null,
      livemode: false,
      metadata: {},
      period: { start: line.start, end: line.end },
      proration: true,
      quantity: line.quantity,
      subscription: subscription.id,
      _line: { ...line, item: { id: line.item.id }, invoiceItem: id },
    };
  }
}

/** The pending prorations of a subscription as invoice lines; `take` marks them billed. */
export function pendingLines(em: Emulation, subscription: Obj, take: boolean): LineInput[] {
  const pending = Object.values(em.state.invoiceItems).filter(
    (ii) => ii.subscription === subscription.id && ii.invoice === null,
  );
  if (take) for (const ii of pending) ii.invoice = 'billed';
  return pending.map((ii) => ii._line as LineInput);
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
 * The usage lines of a subscription's metered items for their current period up to `end`, priced per
 * unit (nothing during a trial). `bill` marks the events billed for the item, so an event of the second
 * a period ends is never billed twice.
 */
export function usageLines(em: Emulation, subscription: Obj, end: number, bill = false): LineInput[] {
  if (subscription.status === 'trialing') return [];
  return (subscription.items.data as Obj[])
    .filter((item) => isMetered(item.price))
    .map((item) => {
      const meter: string = item.price.recurring.meter;
      const events = meterEventsFor(
        em,
        meter,
        subscription.customer,
        item.current_period_start,
        end + 1,
      ).filter((e) => !e._billed?.includes(item.id));
      if (bill) for (const e of events) e._billed = [...(e._billed ?? []), item.id];
      const usage = aggregate(em, meter, events);
      const unit = Number(item.price.unit_amount_decimal ?? item.price.unit_amount);
      return {
        item,
        price: item.price,
        quantity: usage,
        amount: Math.round(usage * unit),
        start: item.current_period_start,
        end: item.current_period_end,
        proration: false,
        description: `${usage} × ${productName(item)} (usage)`,
      };
    });
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
