import { now, randomId } from './objects.js';
import { allow, type Obj, type Params, str } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/**
 * `/v1/invoices`: one per subscription start, renewal and immediately invoiced change, paid at once
 * unless a payment is declined or awaits the customer. Lines are built by `itemLine`; the subscription's
 * discounts apply to the discountable ones.
 */

export interface LineInput {
  readonly item: Obj;
  readonly price: Obj;
  readonly amount: number;
  /** For a metered item, the usage billed. */
  readonly quantity: number;
  readonly start: number;
  readonly end: number;
  readonly proration: boolean;
  readonly description: string;
  /** The pending invoice item (`ii_…`) a proration line bills, if any. */
  readonly invoiceItem?: string | null;
}

/** An invoice line of a subscription item, in Stripe's `line_item` shape. */
export function itemLine(subscription: Obj, line: LineInput, preview = false): Obj {
  return {
    id: randomId(preview ? 'il_tmp_' : 'il_', 24),
    object: 'line_item',
    amount: line.amount,
    currency: subscription.currency,
    description: line.description,
    discount_amounts: [],
    discountable: !line.proration,
    discounts: [],
    invoice: null,
    livemode: false,
    metadata: {},
    // A pending invoice item (a proration made earlier) is billed as such; the rest as the item's own lines.
    parent: line.invoiceItem
      ? {
          type: 'invoice_item_details',
          invoice_item_details: {
            invoice_item: line.invoiceItem,
            proration: line.proration,
            proration_details: { credited_items: null },
            subscription: subscription.id,
          },
          subscription_item_details: null,
        }
      : {
          type: 'subscription_item_details',
          invoice_item_details: null,
          subscription_item_details: {
            invoice_item: null,
            proration: line.proration,
            proration_details: { credited_items: null },
            subscription: subscription.id,
            subscription_item: line.item.id,
          },
        },
    period: { start: line.start, end: line.end },
    pretax_credit_amounts: [],
    pricing: {
      type: 'price_details',
      price_details: { price: line.price.id, product: line.price.product },
      unit_amount_decimal: line.price.unit_amount_decimal ?? String(line.price.unit_amount),
    },
    quantity: line.quantity,
    subtotal: line.amount,
    taxes: [],
  };
}

/** A subscription's discount objects. */
export const discountsOf = (em: Emulation, subscription: Obj): Obj[] =>
  (subscription.discounts as string[]).map((id) => em.state.discounts[id]).filter((d) => d !== undefined);

/** What discounts (objects) take off `lines` (the discountable ones), one after the other. */
export function discountAmounts(em: Emulation, discounts: readonly Obj[], lines: readonly Obj[]): Obj[] {
  let base = lines.filter((l) => l.discountable).reduce((sum, l) => sum + l.amount, 0);
  const amounts: Obj[] = [];
  for (const discount of discounts) {
    const id: string = discount.id;
    const coupon = em.state.coupons[discount.source.coupon];
    if (!coupon || base <= 0) continue;
    if (discount.end !== null && discount.end <= now()) continue;
    const amount =
      coupon.percent_off !== null
        ? Math.round((base * coupon.percent_off) / 100)
        : Math.min(base, coupon.amount_off ?? 0);
    base -= amount;
    amounts.push({ amount, discount: id });
  }
  return amounts;
}

/** The invoice's money fields from its lines and discounts. */
export function invoiceTotals(lines: readonly Obj[], discounts: readonly Obj[]): Obj {
  const subtotal = lines.reduce((sum, l) => sum + l.amount, 0);
  const discount = discounts.reduce((sum, d) => sum + d.amount, 0);
  const total = subtotal - discount;
  return {
    subtotal,
    subtotal_excluding_tax: subtotal,
    total,
    total_excluding_tax: total,
    total_discount_amounts: discounts,
    amount_due: Math.max(0, total),
  };
}

export interface InvoiceOptions {
  /** `open`: awaiting payment (declined, or `default_incomplete`); `paid` otherwise. */
  readonly status?: 'paid' | 'open';
}

export function newInvoice(
  em: Emulation,
  subscription: Obj,
  billingReason: string,
  lineInputs: readonly LineInput[],
  options: InvoiceOptions = {},
): Obj {
  const created = now();
  const id = randomId('in_', 24);
  const customer = em.state.customers[subscription.customer];
  const lines: Obj[] = lineInputs.map((l) => ({ ...itemLine(subscription, l), invoice: id }));
  const discounts = discountAmounts(em, discountsOf(em, subscription), lines);
  for (const d of discounts) {
    // Stripe spreads a discount over the discountable lines; here it is noted on the first one.
    const line = lines.find((l) => l.discountable);
    if (line) {
      line.discount_amounts.push(d);
      line.discounts.push(d.discount);
    }
  }
  const totals = invoiceTotals(lines, discounts);
  const paid = options.status !== 'open';
  const due: number = totals.amount_due;
  const invoice: Obj = {
    id,
    object: 'invoice',
    account_country: 'US',
    account_name: null,
    amount_paid: paid ? due : 0,
    amount_remaining: paid ? 0 : due,
    amount_shipping: 0,
    attempt_count: due > 0 && paid ? 1 : 0,
    attempted: due > 0 && paid,
    auto_advance: !paid,
    billing_reason: billingReason,
    collection_method: 'charge_automatically',
    created,
    currency: subscription.currency,
    customer: subscription.customer,
    customer_email: customer?.email ?? null,
    customer_name: customer?.name ?? null,
    default_payment_method: null,
    description: null,
    discounts: discounts.map((d) => d.discount),
    due_date: null,
    effective_at: created,
    ending_balance: 0,
    hosted_invoice_url: `${em.url}/invoices/${id}`,
    invoice_pdf: `${em.url}/invoices/${id}/pdf`,
    lines: {
      object: 'list',
      data: lines,
      has_more: false,
      total_count: lines.length,
      url: `/v1/invoices/${id}/lines`,
    },
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
    starting_balance: 0,
    status: paid ? 'paid' : 'open',
    status_transitions: {
      finalized_at: created,
      marked_uncollectible_at: null,
      paid_at: paid ? created : null,
      voided_at: null,
    },
    ...totals,
  };
  em.state.invoices[id] = invoice;
  // A `once` coupon is used up by the first invoice it discounts, as at Stripe.
  subscription.discounts = (subscription.discounts as string[]).filter((d) => {
    const used = discounts.some((x) => x.discount === d);
    return !(used && em.state.coupons[em.state.discounts[d]?.source.coupon]?.duration === 'once');
  });
  return invoice;
}

export function listInvoices(em: Emulation, params: Params): Obj {
  allow(params, [
    'customer',
    'subscription',
    'status',
    'created',
    'limit',
    'starting_after',
    'ending_before',
  ]);
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
