import { missing } from './errors.js';
import { now, randomId } from './objects.js';
import { allow, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
import { searchPage } from './search.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/** `/v1/customers`: created by the API or by paying on the checkout page. */

export function createCustomer(em: Emulation, params: Params): Obj {
  allow(params, ['email', 'name', 'description', 'metadata', 'phone', 'address']);
  return newCustomer(em, {
    email: str(params, 'email') ?? null,
    name: str(params, 'name') ?? null,
    description: str(params, 'description') ?? null,
    phone: str(params, 'phone') ?? null,
    address: obj(params, 'address') ?? null,
    metadata: mergeMetadata({}, params),
  });
}

export function newCustomer(em: Emulation, fields: Obj): Obj {
  const customer: Obj = {
    id: randomId('cus_', 14),
    object: 'customer',
    address: null,
    balance: 0,
    created: now(),
    currency: null,
    default_source: null,
    delinquent: false,
    description: null,
    discount: null,
    email: null,
    invoice_prefix: randomId('', 8).toUpperCase(),
    invoice_settings: {
      custom_fields: null,
      default_payment_method: null,
      footer: null,
      rendering_options: null,
    },
    livemode: false,
    metadata: {},
    name: null,
    phone: null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: null,
    ...fields,
  };
  em.state.customers[customer.id] = customer;
  em.emit('customer.created', customer);
  return customer;
}

/** A customer that exists (not deleted), or Stripe's 404. */
export function customerOrFail(em: Emulation, id: string, param = 'id'): Obj {
  const customer = findOrFail('customer', em.state.customers, id, param);
  if (customer.deleted) throw missing('customer', id, param);
  return customer;
}

/** `GET /v1/customers/:id`: a deleted customer answers as Stripe's deleted object. */
export function retrieveCustomer(em: Emulation, id: string): Obj {
  return findOrFail('customer', em.state.customers, id);
}

/** `GET /v1/customers/search`. */
export function searchCustomers(em: Emulation, params: Params): Obj {
  const live = Object.values(em.state.customers).filter((c) => !c.deleted);
  return searchPage(
    '/v1/customers/search',
    'customers',
    ['email', 'name', 'phone', 'metadata', 'created'],
    live,
    params,
  );
}

export function updateCustomer(em: Emulation, id: string, params: Params): Obj {
  allow(params, ['email', 'name', 'description', 'metadata', 'phone', 'address']);
  const customer = customerOrFail(em, id);
  for (const key of ['email', 'name', 'description', 'phone'] as const) {
    if (params[key] !== undefined) customer[key] = str(params, key) ?? null;
  }
  if (params.address !== undefined) customer.address = obj(params, 'address') ?? null;
  customer.metadata = mergeMetadata(customer.metadata, params);
  em.emit('customer.updated', customer);
  return customer;
}

export function listCustomers(em: Emulation, params: Params): Obj {
  allow(params, ['email', 'created', 'limit', 'starting_after', 'ending_before']);
  const email = str(params, 'email');
  const items = Object.values(em.state.customers).filter(
    (c) => !c.deleted && (email === undefined || c.email === email),
  );
  return listPage('/v1/customers', items, params);
}
