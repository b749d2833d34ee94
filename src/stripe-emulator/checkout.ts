import { couponOrFail, discounted, promotionCodeOrFail, promotionCodeProblem } from './coupons.js';
import { customerOrFail, newCustomer } from './customers.js';
import { invalid } from './errors.js';
import { newInvoice } from './invoices.js';
import { DAY, now, randomId } from './objects.js';
import {
  allow,
  arr,
  bool,
  httpUrl,
  int,
  mergeMetadata,
  type Obj,
  obj,
  type Params,
  str,
} from './parameters.js';
import { attachPaymentMethod } from './payment-methods.js';
import { priceOrFail } from './prices.js';
import { type Emulation, findOrFail, listPage } from './state.js';
import { periodLines } from './subscription-items.js';
import { newSubscription } from './subscriptions.js';

/**
 * `/v1/checkout/sessions` (subscription mode, one recurring line item) and what paying one does.
 * The session's page itself is in pay-page.ts.
 */

export function createCheckoutSession(em: Emulation, params: Params): Obj {
  allow(params, [
    'mode',
    'line_items',
    'success_url',
    'cancel_url',
    'customer',
    'customer_email',
    'client_reference_id',
    'metadata',
    'subscription_data',
    'payment_method_collection',
    'billing_address_collection',
    'discounts',
    'allow_promotion_codes',
  ]);
  const mode = str(params, 'mode', true);
  if (mode !== 'subscription' && mode !== 'payment')
    throw invalid('The Stripe emulator supports mode=subscription and mode=payment.', 'mode');
  const successUrl = httpUrl(str(params, 'success_url', true)!, 'success_url');
  const cancelUrlParam = str(params, 'cancel_url');
  const cancelUrl = cancelUrlParam ? httpUrl(cancelUrlParam, 'cancel_url') : null;
  const customerId = str(params, 'customer');
  const customerEmail = str(params, 'customer_email');
  if (customerId && customerEmail)
    throw invalid(
      'You may only specify one of these parameters: customer, customer_email.',
      'customer_email',
    );
  if (customerId) customerOrFail(em, customerId, 'customer');
  const lines = readLineItems(em, params, mode);
  const { price, quantity } = lines[0]!;
  const subtotal = lines.reduce((sum, line) => sum + dueAtCheckout(line.price, line.quantity), 0);
  const subscriptionData = obj(params, 'subscription_data') ?? {};
  allow(subscriptionData, ['metadata', 'trial_period_days', 'trial_settings', 'description']);
  const trialDays = int(subscriptionData, 'trial_period_days') ?? 0;
  if (trialDays < 0 || trialDays > 730)
    throw invalid('Invalid trial_period_days', 'subscription_data[trial_period_days]');
  const missingPaymentMethod =
    str(obj(obj(subscriptionData, 'trial_settings') ?? {}, 'end_behavior') ?? {}, 'missing_payment_method') ??
    'create_invoice';
  const paymentMethodCollection = str(params, 'payment_method_collection') ?? 'always';
  if (!['always', 'if_required'].includes(paymentMethodCollection))
    throw invalid('Invalid payment_method_collection', 'payment_method_collection');
  const billingAddressCollection = str(params, 'billing_address_collection') ?? 'auto';
  if (!['auto', 'required'].includes(billingAddressCollection))
    throw invalid('Invalid billing_address_collection', 'billing_address_collection');
  const discounts = arr(params, 'discounts');
  if (discounts.length > 1) throw invalid('You may only specify one discount.', 'discounts');
  let discount: Obj | null = null;
  if (discounts.length === 1) {
    const promotionCodeId = str(discounts[0]!, 'promotion_code');
    const couponId = str(discounts[0]!, 'coupon');
    if (promotionCodeId) {
      const promotionCode = promotionCodeOrFail(em, promotionCodeId, 'discounts[0][promotion_code]');
      const problem = promotionCodeProblem(em, promotionCode, price);
      if (problem) throw invalid(problem, 'discounts[0][promotion_code]');
      discount = { coupon: null, promotion_code: promotionCodeId };
    } else if (couponId) {
      const coupon = couponOrFail(em, couponId, 'discounts[0][coupon]');
      if (!coupon.valid)
        throw invalid(`The coupon \`${couponId}\` is no longer valid.`, 'discounts[0][coupon]');
      discount = { coupon: couponId, promotion_code: null };
    }
  }
  if (discount && bool(params, 'allow_promotion_codes')) {
    throw invalid(
      'You may only specify one of these parameters: allow_promotion_codes, discounts.',
      'discounts',
    );
  }
  const id = randomId('cs_test_', 58);
  const created = now();
  const session: Obj = {
    id,
    object: 'checkout.session',
    allow_promotion_codes: bool(params, 'allow_promotion_codes') ?? null,
    amount_subtotal: subtotal,
    amount_total: discounted(em, subtotal, discount),
    billing_address_collection: billingAddressCollection,
    cancel_url: cancelUrl,
    client_reference_id: str(params, 'client_reference_id') ?? null,
    created,
    currency: price.currency,
    customer: customerId ?? null,
    customer_creation: customerId ? null : 'always',
    customer_details: null,
    customer_email: customerEmail ?? null,
    discounts: discount ? [discount] : [],
    expires_at: created + DAY,
    invoice: null,
    livemode: false,
    metadata: mergeMetadata({}, params),
    mode,
    payment_intent: null,
    payment_method_collection: paymentMethodCollection,
    payment_status: 'unpaid',
    status: 'open',
    subscription: null,
    success_url: successUrl,
    url: `${em.url}/checkout/${id}`,
  };
  // Kept beside the session (Stripe does not echo these back) for the subscription made on payment.
  em.state.checkoutSessions[id] = {
    ...session,
    _line: { price: price.id, quantity },
    _lines: lines.map((line) => ({ id: randomId('li_', 24), price: line.price.id, quantity: line.quantity })),
    _subscription_data: {
      metadata: mergeMetadata({}, subscriptionData),
      trial_period_days: trialDays,
      missing_payment_method: missingPaymentMethod,
    },
  };
  return session;
}

/** A session as the API answers it: without the emulator's own fields, expired once past `expires_at`. */
export function retrieveCheckoutSession(em: Emulation, id: string): Obj {
  const stored = findOrFail('checkout.session', em.state.checkoutSessions, id);
  const { _line, _lines, _subscription_data, ...session } = stored;
  if (session.status === 'open' && session.expires_at <= now()) stored.status = session.status = 'expired';
  return session;
}

/**
 * `POST /v1/checkout/sessions/:id/expire`: an open session can no longer be paid. Stripe refuses
 * any other status and sends `checkout.session.expired`.
 */
export function expireCheckoutSession(em: Emulation, id: string): Obj {
  const session = retrieveCheckoutSession(em, id);
  if (session.status !== 'open')
    throw invalid(
      `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${session.status}".`,
    );
  em.state.checkoutSessions[id]!.status = 'expired';
  const expired = retrieveCheckoutSession(em, id);
  em.emit('checkout.session.expired', expired);
  return expired;
}

/** What the payer entered on the page, already checked there. */
export interface Payment {
  readonly email: string;
  readonly name: string | null;
  readonly paymentMethod: string | null;
  readonly address: Obj | null;
}

/**
 * Paying a session: the customer (if new), the subscription, its first invoice, the redemptions of
 * its discount, the session completed, then the events in Stripe's order.
 */
export function completeCheckout(em: Emulation, stored: Obj, payment: Payment): void {
  const { name, paymentMethod, address } = payment;
  const customer =
    (stored.customer ? em.state.customers[stored.customer] : undefined) ??
    newCustomer(em, { email: stored.customer_email ?? payment.email, name, address });
  if (paymentMethod) customer.invoice_settings.default_payment_method = paymentMethod;

  attachPaymentMethod(em, paymentMethod, customer.id);
  if (stored.mode === 'payment') {
    completePayment(em, stored, customer, payment);
    return;
  }
  const subscription = newSubscription(em, stored, customer.id, paymentMethod);
  const invoice = newInvoice(
    em,
    subscription,
    'subscription_create',
    periodLines(subscription, subscription.created),
  );
  subscription.latest_invoice = invoice.id;

  const promotionCodeId = stored.discounts[0]?.promotion_code;
  const couponId =
    stored.discounts[0]?.coupon ??
    (promotionCodeId ? em.state.promotionCodes[promotionCodeId]?.promotion.coupon : undefined);
  if (promotionCodeId) em.state.promotionCodes[promotionCodeId]!.times_redeemed += 1;
  if (couponId) em.state.coupons[couponId]!.times_redeemed += 1;

  stored.status = 'complete';
  stored.payment_status = invoice.amount_due > 0 ? 'paid' : 'no_payment_required';
  stored.customer = customer.id;
  stored.subscription = subscription.id;
  stored.invoice = invoice.id;
  stored.customer_details = {
    address,
    email: customer.email,
    name: name ?? customer.name,
    phone: null,
    tax_exempt: 'none',
    tax_ids: [],
  };

  em.emit('customer.subscription.created', subscription);
  em.emit('invoice.created', invoice);
  em.emit('invoice.finalized', invoice);
  em.emit('invoice.paid', invoice);
  em.emit('checkout.session.completed', retrieveCheckoutSession(em, stored.id));
}

/**
 * `line_items[n]`: in `subscription` mode recurring prices (one currency and interval), in `payment`
 * mode one-time prices; each active.
 */
function readLineItems(em: Emulation, params: Params, mode: string): { price: Obj; quantity: number }[] {
  const lineItems = arr(params, 'line_items');
  if (lineItems.length === 0) throw invalid('Missing required param: line_items.', 'line_items');
  const lines = lineItems.map((line, i) => {
    const where = `line_items[${i}]`;
    const price = priceOrFail(em, str(line, 'price', true)!, `${where}[price]`);
    if (!price.active) throw invalid(`The price \`${price.id}\` is not active.`, `${where}[price]`);
    if (mode === 'payment' && price.recurring)
      throw invalid(
        'You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.',
        `${where}[price]`,
      );
    if (mode === 'subscription' && price.recurring?.usage_type === 'metered' && line.quantity !== undefined)
      throw invalid('Quantity should not be specified where usage_type is `metered`.', `${where}[quantity]`);
    const quantity = int(line, 'quantity') ?? 1;
    if (quantity < 1) throw invalid('This value must be greater than or equal to 1.', `${where}[quantity]`);
    return { price, quantity };
  });
  if (mode === 'subscription' && !lines.some((line) => line.price.recurring))
    throw invalid(
      'You must provide at least one recurring price in `subscription` mode.',
      'line_items[0][price]',
    );
  if (mode === 'subscription' && lines.some((line) => !line.price.recurring))
    throw invalid('The Stripe emulator supports only recurring prices in `subscription` mode.', 'line_items');
  return lines;
}

/** Paying a `payment` mode session: one charge of its total, no subscription. */
function completePayment(em: Emulation, stored: Obj, customer: Obj, payment: Payment): void {
  stored.status = 'complete';
  stored.payment_status = 'paid';
  stored.customer = customer.id;
  stored.payment_intent = randomId('pi_', 24);
  stored.customer_details = {
    address: payment.address,
    email: customer.email,
    name: payment.name ?? customer.name,
    phone: null,
    tax_exempt: 'none',
    tax_ids: [],
  };
  em.emit('checkout.session.completed', retrieveCheckoutSession(em, stored.id));
}

/** `GET /v1/checkout/sessions`. */
export function listCheckoutSessions(em: Emulation, params: Params): Obj {
  allow(params, [
    'customer',
    'subscription',
    'status',
    'payment_intent',
    'created',
    'limit',
    'starting_after',
    'ending_before',
  ]);
  const customer = str(params, 'customer');
  const subscription = str(params, 'subscription');
  const status = str(params, 'status');
  const paymentIntent = str(params, 'payment_intent');
  const sessions = Object.keys(em.state.checkoutSessions)
    .map((id) => retrieveCheckoutSession(em, id))
    .filter(
      (s) =>
        (customer === undefined || s.customer === customer) &&
        (subscription === undefined || s.subscription === subscription) &&
        (status === undefined || s.status === status) &&
        (paymentIntent === undefined || s.payment_intent === paymentIntent),
    );
  return listPage('/v1/checkout/sessions', sessions, params);
}

/** `GET /v1/checkout/sessions/:id/line_items`: the session's lines as Stripe's `item` objects. */
export function listCheckoutLineItems(em: Emulation, id: string, params: Params): Obj {
  allow(params, ['limit', 'starting_after', 'ending_before']);
  const stored = findOrFail('checkout.session', em.state.checkoutSessions, id);
  const lines: Obj[] = stored._lines ?? [{ id: `li_${id.slice(-24)}`, ...stored._line }];
  const discount = stored.discounts[0] ?? null;
  const items = lines.map((line, i) => {
    const price = em.state.prices[line.price]!;
    const subtotal = dueAtCheckout(price, line.quantity);
    const total = discounted(em, subtotal, discount);
    return {
      id: line.id,
      object: 'item',
      amount_discount: subtotal - total,
      amount_subtotal: subtotal,
      amount_tax: 0,
      amount_total: total,
      currency: price.currency,
      description: em.state.products[price.product]?.name ?? price.id,
      price,
      quantity: line.quantity,
      // Listed in the order given: `created` only orders the page.
      created: lines.length - i,
    };
  });
  const page = listPage(`/v1/checkout/sessions/${id}/line_items`, items, params);
  return { ...page, data: page.data.map(({ created: _created, ...item }: Obj) => item) };
}

/** What a line costs when the checkout is paid: a metered price is billed later, for its usage. */
export const dueAtCheckout = (price: Obj, quantity: number): number =>
  price.recurring?.usage_type === 'metered' ? 0 : price.unit_amount * quantity;
