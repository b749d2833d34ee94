import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { invalid, missing } from './errors.js';
import type { Obj, Params } from './parameters.js';
import { int, str } from './parameters.js';

/** Every object the emulator holds, by id; plain JSON so it can be written to a file as is. */
export interface State {
  customers: Record<string, Obj>;
  products: Record<string, Obj>;
  prices: Record<string, Obj>;
  coupons: Record<string, Obj>;
  promotionCodes: Record<string, Obj>;
  checkoutSessions: Record<string, Obj>;
  subscriptions: Record<string, Obj>;
  invoices: Record<string, Obj>;
  events: Record<string, Obj>;
  portalConfigurations: Record<string, Obj>;
  portalSessions: Record<string, Obj>;
  /** Applied coupons (`di_…`), which subscriptions and invoices name in `discounts`. */
  discounts: Record<string, Obj>;
  /** Pending invoice items (`ii_…`): prorations waiting for the subscription's next invoice. */
  invoiceItems: Record<string, Obj>;
  meters: Record<string, Obj>;
  /** Meter events by `identifier` (what Stripe de-duplicates them by). */
  meterEvents: Record<string, Obj>;
  /** Cancelled meter events (meter event adjustments) by identifier: they count for nothing. */
  cancelledMeterEvents: Record<string, Obj>;
  paymentMethods: Record<string, Obj>;
  setupIntents: Record<string, Obj>;
}

const emptyState = (): State => ({
  customers: {},
  products: {},
  prices: {},
  coupons: {},
  promotionCodes: {},
  checkoutSessions: {},
  subscriptions: {},
  invoices: {},
  events: {},
  portalConfigurations: {},
  portalSessions: {},
  discounts: {},
  invoiceItems: {},
  meters: {},
  meterEvents: {},
  cancelledMeterEvents: {},
  paymentMethods: {},
  setupIntents: {},
});

/**
 * What the resource handlers work on: the tables, the emulator's own URL (hosted pages link to it),
 * the event log (which also sends webhooks) and persistence.
 */
export interface Emulation {
  readonly state: State;
  readonly url: string;
  emit(type: string, object: Obj, previous?: Obj): void;
  save(): void;
}

/** The state kept in `file` when it exists (a development restart), else an empty one. */
export function loadState(file: string | undefined): State {
  // The state file may be the first thing written under DATA_DIR (e.g. with DATABASE_URL and ADMIN_TOKEN set).
  if (file) mkdirSync(path.dirname(file), { recursive: true });
  return file && existsSync(file)
    ? { ...emptyState(), ...(JSON.parse(readFileSync(file, 'utf8')) as Partial<State>) }
    : emptyState();
}

/** Written to a temporary file and renamed, so a crash never leaves half a state behind. */
export function saveState(file: string | undefined, state: State): void {
  if (!file) return;
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(state), { mode: 0o600 });
  renameSync(tmp, file);
}

export function findOrFail(kind: string, table: Record<string, Obj>, id: string, param = 'id'): Obj {
  const found = table[id];
  if (!found) throw missing(kind, id, param);
  return found;
}

/** A Stripe list page: `limit` (1–100, default 10) and `starting_after` cursor pagination. */
export function listPage(url: string, items: Obj[], params: Params): Obj {
  const limit = int(params, 'limit') ?? 10;
  items = items.filter(createdFilter(params));
  if (limit < 1 || limit > 100) throw invalid('This value must be between 1 and 100.', 'limit');
  // Newest first, like Stripe; items created in the same second keep reverse insertion order.
  let sorted = items
    .map((item, i) => ({ item, i }))
    .sort((a, b) => b.item.created - a.item.created || b.i - a.i);
  const after = str(params, 'starting_after');
  const before = str(params, 'ending_before');
  if (after) {
    const index = sorted.findIndex(({ item }) => item.id === after);
    sorted = index === -1 ? [] : sorted.slice(index + 1);
  } else if (before) {
    const index = sorted.findIndex(({ item }) => item.id === before);
    sorted = index === -1 ? [] : sorted.slice(Math.max(0, index - limit), index);
    return { object: 'list', data: sorted.map(({ item }) => item), has_more: index - limit > 0, url };
  }
  return {
    object: 'list',
    data: sorted.slice(0, limit).map(({ item }) => item),
    has_more: sorted.length > limit,
    url,
  };
}

/** Stripe's `created` filter: a timestamp, or `created[gt|gte|lt|lte]`. */
function createdFilter(params: Params): (item: Obj) => boolean {
  const created = params.created;
  if (created === undefined || created === '') return () => true;
  if (typeof created === 'string') {
    const at = int(params, 'created')!;
    return (item) => item.created === at;
  }
  const range = created as Params;
  for (const key of Object.keys(range)) {
    if (!['gt', 'gte', 'lt', 'lte'].includes(key))
      throw invalid(`Received unknown parameter: created[${key}]`);
  }
  const gt = int(range, 'gt');
  const gte = int(range, 'gte');
  const lt = int(range, 'lt');
  const lte = int(range, 'lte');
  return (item) =>
    (gt === undefined || item.created > gt) &&
    (gte === undefined || item.created >= gte) &&
    (lt === undefined || item.created < lt) &&
    (lte === undefined || item.created <= lte);
}
