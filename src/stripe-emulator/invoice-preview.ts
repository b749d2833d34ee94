import { invalid } from './errors.js';
import { discountAmounts, invoiceTotals, itemLine } from './invoices.js';
import { now, randomId } from './objects.js';
import { allow, arr, int, type Obj, obj, type Params, str } from './parameters.js';
import type { Emulation } from './state.js';
import {
  applyItemChanges,
  PRORATION_BEHAVIORS,
  pendingLines,
  periodLines,
  prorationLines,
  subscriptionOrFail,
  usageLines,
} from './subscriptions.js';

/**
 * `POST /v1/invoices/create_preview` for a subscription: the next invoice, if `subscription_details`
 * changed its items now (`items[n]` with `id`, `price`, `quantity`, `deleted`, or a new item). Its lines:
 * pending and new prorations (marked `proration: true`), the metered usage so far and the licensed items
 * for the next period, with the subscription's discounts applied. Nothing is changed.
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
  const at = int(details, 'proration_date') ?? now();
  const { items, changes } = applyItemChanges(
    em,
    subscription,
    arr(details, 'items'),
    'subscription_details[items]',
  );
  // What the subscription would be after the change, as a copy.
  const changed: Obj = { ...subscription, items: { ...subscription.items, data: items } };
  const prorations = behavior === 'none' ? [] : prorationLines(changed, changes, at);
  const periodEnd: number = items[0]!.current_period_end;
  const inputs = [
    ...usageLines(em, changed, at),
    ...pendingLines(em, subscription, false),
    ...prorations,
    ...periodLines({ ...changed, status: 'active' }, periodEnd),
  ];
  const lines = inputs.map((input) => itemLine(subscription, input, true));
  const discounts = discountAmounts(em, subscription, lines);
  const totals = invoiceTotals(lines, discounts);
  return {
    id: `upcoming_${randomId('in_', 24)}`,
    object: 'invoice',
    amount_paid: 0,
    amount_remaining: totals.amount_due,
    amount_shipping: 0,
    billing_reason: 'upcoming',
    collection_method: subscription.collection_method,
    created: at,
    currency: subscription.currency,
    customer: subscription.customer,
    discounts: discounts.map((d) => d.discount),
    lines: { object: 'list', data: lines, has_more: false, url: '/v1/invoices/upcoming/lines' },
    livemode: false,
    parent: {
      quote_details: null,
      subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id },
      type: 'subscription_details',
    },
    period_end: periodEnd,
    period_start: items[0]!.current_period_start,
    status: 'draft',
    ...totals,
  };
}
