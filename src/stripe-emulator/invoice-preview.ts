import { invalid } from './errors.js';
import { now, periodEnd, randomId } from './objects.js';
import { allow, arr, type Obj, obj, type Params, str } from './parameters.js';
import { priceOrFail } from './prices.js';
import type { Emulation } from './state.js';
import { PRORATION_BEHAVIORS, prorationAmount, subscriptionOrFail } from './subscriptions.js';

/**
 * `POST /v1/invoices/create_preview` for a subscription change: the next invoice if the item moved to
 * another price now, with the proration lines (credit for the unused time on the old price, charge for
 * the rest of the period on the new one) marked `proration: true`, as Stripe marks them.
 */
export function previewInvoice(em: Emulation, params: Params): Obj {
  allow(params, ['customer', 'subscription', 'subscription_details']);
  const subscription = subscriptionOrFail(em, str(params, 'subscription', true)!);
  const customer = str(params, 'customer');
  if (customer !== undefined && customer !== subscription.customer) {
    throw invalid('The subscription does not belong to this customer.', 'customer');
  }
  const details = obj(params, 'subscription_details') ?? {};
  allow(details, ['items', 'proration_behavior', 'proration_date']);
  const behavior = str(details, 'proration_behavior') ?? 'create_prorations';
  if (!PRORATION_BEHAVIORS.includes(behavior)) {
    throw invalid('Invalid proration_behavior', 'subscription_details[proration_behavior]');
  }
  const item = subscription.items.data[0];
  const wanted = arr(details, 'items')[0];
  const priceId = wanted ? str(wanted, 'price') : undefined;
  const to = priceId ? priceOrFail(em, priceId, 'subscription_details[items][0][price]') : item.price;
  const at = now();
  const line = (amount: number, price: Obj, proration: boolean, start: number, end: number): Obj => ({
    id: randomId('il_tmp_', 24),
    object: 'line_item',
    amount,
    currency: subscription.currency,
    description: proration ? `Proration for ${price.id}` : `1 × ${price.id}`,
    discountable: !proration,
    livemode: false,
    metadata: {},
    parent: {
      type: 'subscription_item_details',
      invoice_item_details: null,
      subscription_item_details: {
        invoice_item: null,
        proration,
        proration_details: { credited_items: null },
        subscription: subscription.id,
        subscription_item: item.id,
      },
    },
    period: { start, end },
    pricing: { type: 'price_details', price_details: { price: price.id, product: price.product } },
    quantity: item.quantity,
  });
  const lines: Obj[] = [];
  if (to.id !== item.price.id && behavior !== 'none' && subscription.status !== 'trialing') {
    const total = prorationAmount(subscription, item.price, to);
    const credit = -prorationAmount(subscription, item.price, { ...item.price, unit_amount: 0 });
    lines.push(
      line(-credit, item.price, true, at, item.current_period_end),
      line(total + credit, to, true, at, item.current_period_end),
    );
  }
  const nextEnd = periodEnd(to, item.current_period_end);
  lines.push(line(to.unit_amount * item.quantity, to, false, item.current_period_end, nextEnd));
  const total = lines.reduce((sum, l) => sum + l.amount, 0);
  return {
    id: `upcoming_${randomId('in_', 24)}`,
    object: 'invoice',
    amount_due: Math.max(0, total),
    amount_paid: 0,
    amount_remaining: Math.max(0, total),
    billing_reason: 'upcoming',
    created: at,
    currency: subscription.currency,
    customer: subscription.customer,
    lines: { object: 'list', data: lines, has_more: false, url: '/v1/invoices/upcoming/lines' },
    livemode: false,
    parent: {
      quote_details: null,
      subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id },
      type: 'subscription_details',
    },
    period_end: item.current_period_end,
    period_start: item.current_period_start,
    status: 'draft',
    subtotal: total,
    total,
  };
}
