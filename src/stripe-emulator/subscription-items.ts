import { invalid } from './errors.js';
import type { LineInput } from './invoices.js';
import { aggregate, meterEventsFor } from './meters.js';
import { now, periodEnd, randomId } from './objects.js';
import { allow, bool, int, mergeMetadata, type Obj, type Params, str } from './parameters.js';
import { priceOrFail } from './prices.js';
import type { Emulation } from './state.js';

/**
 * A subscription's items and what they bill: licensed items in advance for their quantity, metered
 * items (no quantity) in arrears for the usage their meter aggregated; item changes (`items[n]` of an
 * update or a preview) and their prorations, kept as pending invoice items until the next invoice.
 * Every item of a subscription shares its period, currency and interval.
 */

/** Stripe's limit on a subscription's items. */
export const MAX_ITEMS = 20;

export interface ItemInput {
  readonly price: Obj;
  readonly quantity: number | undefined;
  readonly metadata: Obj;
}

export const isMetered = (price: Obj): boolean => price.recurring?.usage_type === 'metered';

export function newItem(subscription: Obj, input: ItemInput, start: number, end: number): Obj {
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

/** The items a new subscription may have: 1 to 20, recurring, one currency and interval, no price twice. */
export function checkItems(items: readonly ItemInput[], param: string): void {
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
export function addPendingProrations(em: Emulation, subscription: Obj, lines: readonly LineInput[]): void {
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
