import { couponOrFail } from './coupons.js';
import { invalid } from './errors.js';
import type { Obj, Params } from './parameters.js';
import type { Emulation, State } from './state.js';

/**
 * Stripe's `expand`: each path names a field holding an id (or a list of ids) that is answered as the
 * object instead; dots go deeper (`subscription.latest_invoice`, `data.price.product` on a list), and an
 * array on the way is expanded element by element. The answer is a copy: stored objects keep their ids.
 */

/** Stripe refuses deeper expansions than this. */
const MAX_DEPTH = 4;

/** The table a field's ids live in, where the field name says it; any other id is looked up everywhere. */
const TABLE_OF_FIELD: Record<string, keyof State> = {
  customer: 'customers',
  subscription: 'subscriptions',
  latest_invoice: 'invoices',
  invoice: 'invoices',
  product: 'products',
  default_price: 'prices',
  price: 'prices',
  coupon: 'coupons',
  promotion_code: 'promotionCodes',
  discounts: 'discounts',
  meter: 'meters',
  default_payment_method: 'paymentMethods',
  payment_method: 'paymentMethods',
  configuration: 'portalConfigurations',
};

/** The `expand` parameter as a list of paths: `expand[]=a`, `expand[0]=a` or, past the parser's limit, an object. */
export function expandPaths(params: Params): string[] {
  const value = params.expand;
  if (value === undefined || value === '') return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'object' && value !== null) return Object.values(value).map(String);
  throw invalid('Invalid array', 'expand');
}

export function expand(em: Emulation, body: Obj, paths: readonly string[]): Obj {
  let out = body;
  for (const path of paths) {
    const segments = path.split('.');
    if (segments.length > MAX_DEPTH) {
      throw invalid(
        `You cannot expand more than ${MAX_DEPTH} levels of a property. Property: ${path}`,
        'expand',
      );
    }
    out = expandAt(em, out, segments, path) as Obj;
  }
  return out;
}

function expandAt(em: Emulation, node: unknown, segments: readonly string[], path: string): unknown {
  if (Array.isArray(node)) return node.map((element) => expandAt(em, element, segments, path));
  if (node === null || typeof node !== 'object') return node;
  const [field, ...rest] = segments as [string, ...string[]];
  const current = node as Obj;
  if (!(field in current)) throw notExpandable(path);
  const value = current[field];
  let next: unknown;
  if (typeof value === 'string') next = resolveOrKeep(em, field, value, path);
  else if (Array.isArray(value) && value.every((v) => typeof v === 'string'))
    next = value.map((id: string) => resolveOrKeep(em, field, id, path));
  else if (value === null || typeof value === 'object') next = value;
  else throw notExpandable(path);
  return { ...current, [field]: rest.length > 0 ? expandAt(em, next, rest, path) : next };
}

/** An id of a kind the emulator does not keep (e.g. a test card) stays an id; any other string is not expandable. */
function resolveOrKeep(em: Emulation, field: string, id: string, path: string): Obj | string {
  const found = resolve(em, field, id);
  if (found) return found;
  if (field in TABLE_OF_FIELD) return id;
  throw notExpandable(path);
}

const notExpandable = (path: string) => invalid(`This property cannot be expanded (${path}).`, 'expand');

/** The object an id names, as the API answers it (without the emulator's own `_` fields). */
function resolve(em: Emulation, field: string, id: string): Obj | undefined {
  if (field === 'coupon' || TABLE_OF_FIELD[field] === 'coupons') {
    const coupon = em.state.coupons[id];
    return coupon ? publicView(coupon._deleted ? coupon : couponOrFail(em, id)) : undefined;
  }
  const table = TABLE_OF_FIELD[field];
  const found =
    (table ? em.state[table][id] : undefined) ??
    Object.values(em.state)
      .map((t: Record<string, Obj>) => t[id])
      .find((o) => o !== undefined);
  return found ? publicView(found) : undefined;
}

/** Drops the fields the emulator keeps beside an object for itself (named with a leading `_`). */
export function publicView(object: Obj): Obj {
  if (!Object.keys(object).some((k) => k.startsWith('_'))) return object;
  return Object.fromEntries(Object.entries(object).filter(([k]) => !k.startsWith('_')));
}
