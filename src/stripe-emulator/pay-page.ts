import type { Request, Response } from 'express';
import { completeCheckout, dueAtCheckout } from './checkout.js';
import { type CheckoutPageView, renderCheckoutPage } from './checkout-page.js';
import { discountCoupon, discounted } from './coupons.js';
import { now } from './objects.js';
import type { Obj } from './parameters.js';
import { newCardPaymentMethod } from './payment-methods.js';
import type { Emulation } from './state.js';

/**
 * The hosted page a checkout session's `url` points at, and its form: checks what the payer entered
 * like Stripe's page would (test card 4000 0000 0000 0002 is declined), then pays the session and
 * sends the browser to `success_url`.
 */

const NOT_FOUND = '<!doctype html><title>Not found</title><p>No such checkout session.</p>';

function checkoutView(em: Emulation, stored: Obj, form: Obj, error: string | null): CheckoutPageView {
  const price = em.state.prices[stored._line.price]!;
  const product = em.state.products[price.product];
  const trialDays: number = stored._subscription_data.trial_period_days;
  const discount = stored.discounts[0] ?? null;
  const lines: Obj[] = stored._lines ?? [stored._line];
  const subtotal = lines.reduce(
    (sum, line) => sum + dueAtCheckout(em.state.prices[line.price]!, line.quantity),
    0,
  );
  const amount = (discounted(em, subtotal, discount) / 100).toFixed(2);
  const interval = !price.recurring
    ? null
    : price.recurring.interval_count > 1
      ? `${price.recurring.interval_count} ${price.recurring.interval}s`
      : price.recurring.interval;
  const promotionCode = discount?.promotion_code
    ? em.state.promotionCodes[discount.promotion_code]
    : undefined;
  const coupon = discountCoupon(em, discount);
  const customer = stored.customer ? em.state.customers[stored.customer] : undefined;
  const closedReason =
    stored.status === 'complete'
      ? 'This checkout session is already complete.'
      : stored.status === 'expired' || stored.expires_at <= now()
        ? 'This checkout session has expired.'
        : null;
  return {
    sessionId: stored.id,
    productName: product?.name ?? 'Subscription',
    amountLabel: `${amount} ${String(price.currency).toUpperCase()}${interval ? ` / ${interval}` : ''}`,
    trialDays,
    discountLabel: coupon
      ? `${promotionCode?.code ?? coupon.id} (${coupon.percent_off !== null ? `${coupon.percent_off}% off` : `${(coupon.amount_off / 100).toFixed(2)} off`})`
      : null,
    email: customer?.email ?? stored.customer_email ?? form.email ?? null,
    askEmail: !customer && !stored.customer_email,
    askCard:
      stored.mode === 'payment' ||
      stored.payment_method_collection === 'always' ||
      stored._subscription_data.trial_period_days === 0,
    askAddress: stored.billing_address_collection === 'required',
    cancelUrl: stored.cancel_url,
    error,
    closedReason,
  };
}

export function showCheckoutPage(em: Emulation, req: Request, res: Response): void {
  const stored = em.state.checkoutSessions[String(req.params.id)];
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  if (!stored) {
    res.status(404).send(NOT_FOUND);
    return;
  }
  res.status(200).send(renderCheckoutPage(checkoutView(em, stored, {}, null)));
}

export function submitCheckoutPage(em: Emulation, req: Request, res: Response): void {
  const stored = em.state.checkoutSessions[String(req.params.id)];
  res.setHeader('cache-control', 'no-store');
  if (!stored) {
    res.status(404).type('html').send(NOT_FOUND);
    return;
  }
  const form = (req.body ?? {}) as Record<string, unknown>;
  const text = (name: string) => (typeof form[name] === 'string' ? (form[name] as string).trim() : '');
  const fail = (status: number, message: string) => {
    res
      .status(status)
      .type('html')
      .send(renderCheckoutPage(checkoutView(em, stored, { email: text('email') }, message)));
  };
  const view = checkoutView(em, stored, {}, null);
  if (view.closedReason) {
    fail(409, view.closedReason);
    return;
  }
  if (view.askEmail && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text('email'))) {
    fail(400, 'Enter a valid email address.');
    return;
  }
  let paymentMethod: string | null = null;
  if (view.askCard) {
    const card = text('card_number').replace(/[\s-]/g, '');
    if (!/^\d{12,19}$/.test(card)) {
      fail(400, 'Your card number is incomplete.');
      return;
    }
    if (card === '4000000000000002') {
      fail(402, 'Your card was declined.');
      return;
    }
    paymentMethod = newCardPaymentMethod(em, card, {
      email: text('email') || null,
      name: text('name') || null,
    }).id;
  }
  let address: Obj | null = null;
  if (view.askAddress) {
    const line1 = text('address_line1');
    const city = text('address_city');
    const postalCode = text('address_postal_code');
    const country = text('address_country').toUpperCase();
    if (!line1 || !city || !postalCode || !/^[A-Z]{2}$/.test(country)) {
      fail(400, 'Your billing address is incomplete.');
      return;
    }
    address = { city, country, line1, line2: null, postal_code: postalCode, state: null };
  }
  completeCheckout(em, stored, { email: text('email'), name: text('name') || null, paymentMethod, address });
  em.save();
  res.redirect(303, stored.success_url.replaceAll('{CHECKOUT_SESSION_ID}', stored.id));
}
