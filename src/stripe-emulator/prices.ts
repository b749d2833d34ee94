import { invalid } from './errors.js';
import { meterOrFail } from './meters.js';
import { INTERVAL_SECONDS, now, randomId } from './objects.js';
import { allow, arr, bool, int, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/** `/v1/products` and `/v1/prices`: what plans are sold at. */

export function createProduct(em: Emulation, params: Params): Obj {
  allow(params, ['id', 'name', 'description', 'active', 'metadata']);
  const id = str(params, 'id') ?? randomId('prod_', 14);
  if (em.state.products[id]) throw invalid(`Product already exists.`, 'id');
  return newProduct(em, id, params);
}

function newProduct(em: Emulation, id: string, params: Params): Obj {
  const created = now();
  const product: Obj = {
    id,
    object: 'product',
    active: bool(params, 'active') ?? true,
    created,
    default_price: null,
    description: str(params, 'description') ?? null,
    images: [],
    livemode: false,
    metadata: mergeMetadata({}, params),
    name: str(params, 'name', true),
    type: 'service',
    updated: created,
    url: null,
  };
  em.state.products[id] = product;
  return product;
}

export function productOrFail(em: Emulation, id: string, param = 'id'): Obj {
  return findOrFail('product', em.state.products, id, param);
}

export function createPrice(em: Emulation, params: Params): Obj {
  allow(params, [
    'currency',
    'unit_amount',
    'recurring',
    'product',
    'product_data',
    'nickname',
    'lookup_key',
    'metadata',
    'active',
  ]);
  const currency = str(params, 'currency', true)!.toLowerCase();
  const unitAmount = int(params, 'unit_amount', true)!;
  if (unitAmount < 0) throw invalid('This value must be greater than or equal to 0.', 'unit_amount');
  const productData = obj(params, 'product_data');
  let productId = str(params, 'product');
  if (productId) productOrFail(em, productId, 'product');
  else if (productData) productId = newProduct(em, randomId('prod_', 14), productData).id;
  else throw invalid('Missing required param: product.', 'product');
  const recurringParams = obj(params, 'recurring');
  let recurring: Obj | null = null;
  if (recurringParams) {
    const interval = str(recurringParams, 'interval', true)!;
    if (!INTERVAL_SECONDS[interval])
      throw invalid(
        `Invalid recurring[interval]: must be one of day, week, month, or year`,
        'recurring[interval]',
      );
    allow(recurringParams, ['interval', 'interval_count', 'usage_type', 'meter', 'trial_period_days']);
    const usageType = str(recurringParams, 'usage_type') ?? 'licensed';
    if (!['licensed', 'metered'].includes(usageType))
      throw invalid(
        'Invalid recurring[usage_type]: must be one of licensed or metered',
        'recurring[usage_type]',
      );
    const meter = str(recurringParams, 'meter') ?? null;
    if (usageType === 'metered' && !meter)
      throw invalid('A meter is required for a metered price: recurring[meter].', 'recurring[meter]');
    if (usageType === 'licensed' && meter)
      throw invalid(
        'Only a metered price (recurring[usage_type]=metered) can name a meter.',
        'recurring[meter]',
      );
    if (meter) meterOrFail(em, meter, 'recurring[meter]');
    recurring = {
      interval,
      interval_count: int(recurringParams, 'interval_count') ?? 1,
      meter,
      trial_period_days: null,
      usage_type: usageType,
    };
  }
  const price: Obj = {
    id: randomId('price_', 24),
    object: 'price',
    active: bool(params, 'active') ?? true,
    billing_scheme: 'per_unit',
    created: now(),
    currency,
    custom_unit_amount: null,
    livemode: false,
    lookup_key: str(params, 'lookup_key') ?? null,
    metadata: mergeMetadata({}, params),
    nickname: str(params, 'nickname') ?? null,
    product: productId,
    recurring,
    tax_behavior: 'unspecified',
    tiers_mode: null,
    transform_quantity: null,
    type: recurring ? 'recurring' : 'one_time',
    unit_amount: unitAmount,
    unit_amount_decimal: String(unitAmount),
  };
  em.state.prices[price.id] = price;
  return price;
}

export function priceOrFail(em: Emulation, id: string, param = 'id'): Obj {
  return findOrFail('price', em.state.prices, id, param);
}

/** `GET /v1/prices` with Stripe's filters. */
export function listPrices(em: Emulation, params: Params): Obj {
  allow(params, [
    'active',
    'currency',
    'product',
    'type',
    'lookup_keys',
    'recurring',
    'created',
    'limit',
    'starting_after',
    'ending_before',
  ]);
  const active = bool(params, 'active');
  const currency = str(params, 'currency')?.toLowerCase();
  const product = str(params, 'product');
  const type = str(params, 'type');
  const lookupKeys = params.lookup_keys === undefined ? undefined : arr(params, 'lookup_keys').map(String);
  const recurring = obj(params, 'recurring') ?? {};
  allow(recurring, ['interval', 'usage_type', 'meter']);
  const interval = str(recurring, 'interval');
  const usageType = str(recurring, 'usage_type');
  const meter = str(recurring, 'meter');
  const items = Object.values(em.state.prices).filter(
    (p) =>
      (active === undefined || p.active === active) &&
      (currency === undefined || p.currency === currency) &&
      (product === undefined || p.product === product) &&
      (type === undefined || p.type === type) &&
      (lookupKeys === undefined || lookupKeys.includes(p.lookup_key)) &&
      (interval === undefined || p.recurring?.interval === interval) &&
      (usageType === undefined || p.recurring?.usage_type === usageType) &&
      (meter === undefined || p.recurring?.meter === meter),
  );
  return listPage('/v1/prices', items, params);
}

/** `GET /v1/products` with Stripe's filters. */
export function listProducts(em: Emulation, params: Params): Obj {
  allow(params, ['active', 'ids', 'created', 'limit', 'starting_after', 'ending_before', 'shippable', 'url']);
  const active = bool(params, 'active');
  const ids = params.ids === undefined ? undefined : arr(params, 'ids').map(String);
  const items = Object.values(em.state.products).filter(
    (p) => (active === undefined || p.active === active) && (ids === undefined || ids.includes(p.id)),
  );
  return listPage('/v1/products', items, params);
}
