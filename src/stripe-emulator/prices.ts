import { invalid } from './errors.js';
import { INTERVAL_SECONDS, now, randomId } from './objects.js';
import { allow, bool, int, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
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
    const usageType = str(recurringParams, 'usage_type') ?? 'licensed';
    if (usageType !== 'licensed' && usageType !== 'metered')
      throw invalid(
        'Invalid recurring[usage_type]: must be one of licensed or metered',
        'recurring[usage_type]',
      );
    recurring = {
      interval,
      interval_count: int(recurringParams, 'interval_count') ?? 1,
      meter: null,
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

export function listPrices(em: Emulation, params: Params): Obj {
  return listPage('/v1/prices', Object.values(em.state.prices), params);
}
