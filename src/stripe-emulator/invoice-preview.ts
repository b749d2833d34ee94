import { customerOrFail } from './customers.js';
import { invalid } from './errors.js';
import { discountAmounts, discountsOf, invoiceTotals, itemLine, type LineInput } from './invoices.js';
import { now, randomId } from './objects.js';
import { allow, arr, int, type Obj, obj, type Params, str } from './parameters.js';
import type { Emulation } from './state.js';
import {
  applyItemChanges,
  pendingLines,
  periodLines,
  prorationLines,
  usageLines,
} from './subscription-items.js';
import {
  newDiscounts,
  PRORATION_BEHAVIORS,
  previewNewSubscription,
  readDiscounts,
  subscriptionOrFail,
} from './subscriptions.js';

/**
 * `POST /v1/invoices/create_preview`: the next invoice of a subscription, if `subscription_details`
 * changed its items now (`items[n]` with `id`, `price`, `quantity`, `deleted`, or a new item), or the
 * first invoice of a new subscription of a customer (`customer` and `subscription_details[items]`).
 * Lines: pending and new prorations (marked `proration: true`), the metered usage so far and the
 * licensed items for the next period; the subscription's discounts apply, or those `discounts` names.
 * Nothing is changed.
 */
export function previewInvoice(em: Emulation, params: Params): Obj {
  allow(params, ['customer', 'subscription', 'subscription_details', 'discounts']);
  const subscriptionId = str(params, 'subscription');
  const customer = str(params, 'customer');
  const details = obj(params, 'subscription_details') ?? {};
  allow(details, ['items', 'proration_behavior', 'proration_date']);
  if (!subscriptionId) {
    if (!customer) throw invalid('Missing required param: customer.', 'customer');
    customerOrFail(em, customer, 'customer');
    const draft = previewNewSubscription(em, customer, arr(details, 'items'), 'subscription_details[items]');
    const discounts = newDiscounts(em, draft, readDiscounts(em, params), draft.created);
    return preview(em, draft, periodLines(draft, draft.created), discounts, {
      billingReason: 'subscription_create',
      start: draft.created,
      end: draft.created,
    });
  }
  const subscription = subscriptionOrFail(em, subscriptionId);
  if (customer !== undefined && customer !== subscription.customer) {
    throw invalid('The subscription does not belong to this customer.', 'customer');
  }
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
  const discounts =
    params.discounts === undefined
      ? discountsOf(em, subscription)
      : newDiscounts(em, subscription, readDiscounts(em, params), at);
  return preview(em, subscription, inputs, discounts, {
    billingReason: 'upcoming',
    start: items[0]!.current_period_start,
    end: periodEnd,
  });
}

function preview(
  em: Emulation,
  subscription: Obj,
  inputs: readonly LineInput[],
  discountObjects: readonly Obj[],
  period: { billingReason: string; start: number; end: number },
): Obj {
  const lines = inputs.map((input) => itemLine(subscription, input, true));
  const discounts = discountAmounts(em, discountObjects, lines);
  const totals = invoiceTotals(lines, discounts);
  return {
    id: `upcoming_${randomId('in_', 24)}`,
    object: 'invoice',
    amount_paid: 0,
    amount_remaining: totals.amount_due,
    amount_shipping: 0,
    billing_reason: period.billingReason,
    collection_method: subscription.collection_method,
    created: now(),
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
    period_end: period.end,
    period_start: period.start,
    status: 'draft',
    ...totals,
  };
}
