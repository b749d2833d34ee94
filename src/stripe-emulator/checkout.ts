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
import { priceOrFail } from './prices.js';
import { type Emulation, findOrFail } from './state.js';
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
  if (mode !== 'subscription') throw invalid('The Stripe emulator supports only mode=subscription.', 'mode');
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
  const lineItems = arr(params, 'line_items');
  if (lineItems.length !== 1)
    throw invalid('The Stripe emulator supports exactly one line item.', 'line_items');
  const price = priceOrFail(em, str(lineItems[0]!, 'price', true)!, 'line_items[0][price]');
  if (!price.recurring)
    throw invalid(
      'You must provide at least one recurring price in `subscription` mode.',
      'line_items[0][price]',
    );
  if (!price.active) throw invalid(`The price \`${price.id}\` is not active.`, 'line_items[0][price]');
  const quantity = int(lineItems[0]!, 'quantity') ?? 1;
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
    amount_subtotal: price.unit_amount * quantity,
    amount_total: discounted(em, price.unit_amount * quantity, discount),
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
  const { _line, _subscription_data, ...session } = stored;
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

  const subscription = newSubscription(em, stored, customer.id, paymentMethod);
  const invoice = newInvoice(em, subscription, 'subscription_create', stored.discounts[0] ?? null);
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
