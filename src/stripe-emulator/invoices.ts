import { discounted } from './coupons.js';
import { now, randomId } from './objects.js';
import { allow, type Obj, type Params, str } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/** `/v1/invoices`: one per subscription start and per renewal, paid at once unless a renewal is declined. */

export function newInvoice(
  em: Emulation,
  subscription: Obj,
  billingReason: string,
  discount: Obj | null,
): Obj {
  const item = subscription.items.data[0];
  const created = now();
  const inTrial = subscription.status === 'trialing';
  const subtotal = inTrial ? 0 : item.price.unit_amount * item.quantity;
  const total = inTrial ? 0 : discounted(em, subtotal, discount);
  const id = randomId('in_', 24);
  const customer = em.state.customers[subscription.customer];
  const invoice: Obj = {
    id,
    object: 'invoice',
    account_country: 'US',
    amount_due: total,
    amount_paid: total,
    amount_remaining: 0,
    attempt_count: total > 0 ? 1 : 0,
    attempted: total > 0,
    billing_reason: billingReason,
    collection_method: 'charge_automatically',
    created,
    currency: subscription.currency,
    customer: subscription.customer,
    customer_email: customer?.email ?? null,
    hosted_invoice_url: `${em.url}/invoices/${id}`,
    invoice_pdf: `${em.url}/invoices/${id}/pdf`,
    lines: { object: 'list', data: [], has_more: false, url: `/v1/invoices/${id}/lines` },
    livemode: false,
    metadata: {},
    number: `${customer?.invoice_prefix ?? 'EMU'}-${String(Object.keys(em.state.invoices).length + 1).padStart(4, '0')}`,
    parent: {
      quote_details: null,
      subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id },
      type: 'subscription_details',
    },
    period_end: created,
    period_start: created,
    status: 'paid',
    status_transitions: {
      finalized_at: created,
      marked_uncollectible_at: null,
      paid_at: created,
      voided_at: null,
    },
    subtotal,
    total,
  };
  em.state.invoices[id] = invoice;
  return invoice;
}

export function listInvoices(em: Emulation, params: Params): Obj {
  allow(params, ['customer', 'subscription', 'status', 'limit', 'starting_after']);
  const customer = str(params, 'customer');
  const subscription = str(params, 'subscription');
  const status = str(params, 'status');
  const items = Object.values(em.state.invoices).filter(
    (i) =>
      (customer === undefined || i.customer === customer) &&
      (subscription === undefined || i.parent?.subscription_details?.subscription === subscription) &&
      (status === undefined || i.status === status),
  );
  return listPage('/v1/invoices', items, params);
}

export function invoiceOrFail(em: Emulation, id: string): Obj {
  return findOrFail('invoice', em.state.invoices, id);
}

/**
 * The invoice a price change with `proration_behavior=always_invoice` bills at once: the difference for
 * the rest of the period, paid from the default payment method (a credit leaves nothing to pay here).
 */
export function newProrationInvoice(em: Emulation, subscription: Obj, amount: number): Obj {
  const invoice = newInvoice(em, subscription, 'subscription_update', null);
  const due = Math.max(0, amount);
  Object.assign(invoice, { subtotal: amount, total: amount, amount_due: due, amount_paid: due });
  return invoice;
}
