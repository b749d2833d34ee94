import {
  createPortalConfiguration,
  createPortalSession,
  listPortalConfigurations,
  portalConfigurationOrFail,
  updatePortalConfiguration,
} from './billing-portal.js';
import {
  createCheckoutSession,
  expireCheckoutSession,
  listCheckoutLineItems,
  listCheckoutSessions,
  retrieveCheckoutSession,
} from './checkout.js';
import {
  couponOrFail,
  createCoupon,
  createPromotionCode,
  deleteCoupon,
  listCoupons,
  listPromotionCodes,
  retrievePromotionCode,
  updatePromotionCode,
} from './coupons.js';
import { deleteCustomer } from './customer-deletion.js';
import {
  createCustomer,
  listCustomers,
  retrieveCustomer,
  searchCustomers,
  updateCustomer,
} from './customers.js';
import { eventOrFail, listEvents } from './events.js';
import { previewInvoice } from './invoice-preview.js';
import { invoiceOrFail, listInvoices } from './invoices.js';
import {
  createMeter,
  createMeterEvent,
  createMeterEventAdjustment,
  listMeterEventSummaries,
  listMeters,
  meterOrFail,
} from './meters.js';
import { bool, type Obj, type Params } from './parameters.js';
import {
  createSetupIntent,
  listCustomerPaymentMethods,
  paymentMethodOrFail,
  setupIntentOrFail,
} from './payment-methods.js';
import {
  createPrice,
  createProduct,
  listPrices,
  listProducts,
  priceOrFail,
  productOrFail,
} from './prices.js';
import type { Emulation } from './state.js';
import {
  cancelSubscription,
  createSubscription,
  listSubscriptions,
  renewSubscription,
  searchSubscriptions,
  subscriptionOrFail,
  updateSubscription,
} from './subscriptions.js';

/** Every API path the emulator answers, in one table; server.ts adds authentication and idempotency. */

export interface Route {
  readonly method: 'get' | 'post' | 'delete';
  readonly path: string;
  /** `params` merges the query and the form body; `id` is the `:id` segment, '' when there is none. */
  readonly handle: (em: Emulation, params: Params, id: string) => Obj;
}

/**
 * Under `/v1`, as Stripe's API. Any other method and path answers Stripe's "Unrecognized request URL";
 * fixed paths (`/customers/search`) come before the `:id` ones they would otherwise match.
 */
export const API_ROUTES: readonly Route[] = [
  { method: 'post', path: '/customers', handle: (em, p) => createCustomer(em, p) },
  { method: 'get', path: '/customers', handle: (em, p) => listCustomers(em, p) },
  { method: 'get', path: '/customers/search', handle: (em, p) => searchCustomers(em, p) },
  { method: 'get', path: '/customers/:id', handle: (em, _p, id) => retrieveCustomer(em, id) },
  { method: 'post', path: '/customers/:id', handle: (em, p, id) => updateCustomer(em, id, p) },
  { method: 'delete', path: '/customers/:id', handle: (em, _p, id) => deleteCustomer(em, id) },
  {
    method: 'get',
    path: '/customers/:id/payment_methods',
    handle: (em, p, id) => listCustomerPaymentMethods(em, id, p),
  },
  { method: 'get', path: '/payment_methods/:id', handle: (em, _p, id) => paymentMethodOrFail(em, id) },
  { method: 'post', path: '/setup_intents', handle: (em, p) => createSetupIntent(em, p) },
  { method: 'get', path: '/setup_intents/:id', handle: (em, _p, id) => setupIntentOrFail(em, id) },
  { method: 'post', path: '/products', handle: (em, p) => createProduct(em, p) },
  { method: 'get', path: '/products', handle: (em, p) => listProducts(em, p) },
  { method: 'get', path: '/products/:id', handle: (em, _p, id) => productOrFail(em, id) },
  { method: 'post', path: '/prices', handle: (em, p) => createPrice(em, p) },
  { method: 'get', path: '/prices', handle: (em, p) => listPrices(em, p) },
  { method: 'get', path: '/prices/:id', handle: (em, _p, id) => priceOrFail(em, id) },
  { method: 'post', path: '/coupons', handle: (em, p) => createCoupon(em, p) },
  { method: 'get', path: '/coupons', handle: (em, p) => listCoupons(em, p) },
  { method: 'get', path: '/coupons/:id', handle: (em, _p, id) => couponOrFail(em, id) },
  { method: 'delete', path: '/coupons/:id', handle: (em, _p, id) => deleteCoupon(em, id) },
  { method: 'post', path: '/promotion_codes', handle: (em, p) => createPromotionCode(em, p) },
  { method: 'get', path: '/promotion_codes', handle: (em, p) => listPromotionCodes(em, p) },
  { method: 'get', path: '/promotion_codes/:id', handle: (em, _p, id) => retrievePromotionCode(em, id) },
  { method: 'post', path: '/promotion_codes/:id', handle: (em, p, id) => updatePromotionCode(em, id, p) },
  { method: 'post', path: '/checkout/sessions', handle: (em, p) => createCheckoutSession(em, p) },
  { method: 'get', path: '/checkout/sessions', handle: (em, p) => listCheckoutSessions(em, p) },
  { method: 'get', path: '/checkout/sessions/:id', handle: (em, _p, id) => retrieveCheckoutSession(em, id) },
  {
    method: 'get',
    path: '/checkout/sessions/:id/line_items',
    handle: (em, p, id) => listCheckoutLineItems(em, id, p),
  },
  {
    method: 'post',
    path: '/checkout/sessions/:id/expire',
    handle: (em, _p, id) => expireCheckoutSession(em, id),
  },
  { method: 'post', path: '/subscriptions', handle: (em, p) => createSubscription(em, p) },
  { method: 'get', path: '/subscriptions', handle: (em, p) => listSubscriptions(em, p) },
  { method: 'get', path: '/subscriptions/search', handle: (em, p) => searchSubscriptions(em, p) },
  { method: 'get', path: '/subscriptions/:id', handle: (em, _p, id) => subscriptionOrFail(em, id) },
  { method: 'post', path: '/subscriptions/:id', handle: (em, p, id) => updateSubscription(em, id, p) },
  { method: 'delete', path: '/subscriptions/:id', handle: (em, p, id) => cancelSubscription(em, id, p) },
  { method: 'get', path: '/invoices', handle: (em, p) => listInvoices(em, p) },
  { method: 'post', path: '/invoices/create_preview', handle: (em, p) => previewInvoice(em, p) },
  { method: 'get', path: '/invoices/:id', handle: (em, _p, id) => invoiceOrFail(em, id) },
  {
    method: 'post',
    path: '/billing_portal/configurations',
    handle: (em, p) => createPortalConfiguration(em, p),
  },
  {
    method: 'get',
    path: '/billing_portal/configurations',
    handle: (em, p) => listPortalConfigurations(em, p),
  },
  {
    method: 'get',
    path: '/billing_portal/configurations/:id',
    handle: (em, _p, id) => portalConfigurationOrFail(em, id),
  },
  {
    method: 'post',
    path: '/billing_portal/configurations/:id',
    handle: (em, p, id) => updatePortalConfiguration(em, id, p),
  },
  { method: 'post', path: '/billing_portal/sessions', handle: (em, p) => createPortalSession(em, p) },
  { method: 'post', path: '/billing/meters', handle: (em, p) => createMeter(em, p) },
  { method: 'get', path: '/billing/meters', handle: (em, p) => listMeters(em, p) },
  { method: 'get', path: '/billing/meters/:id', handle: (em, _p, id) => meterOrFail(em, id) },
  {
    method: 'get',
    path: '/billing/meters/:id/event_summaries',
    handle: (em, p, id) => listMeterEventSummaries(em, id, p),
  },
  { method: 'post', path: '/billing/meter_events', handle: (em, p) => createMeterEvent(em, p) },
  {
    method: 'post',
    path: '/billing/meter_event_adjustments',
    handle: (em, p) => createMeterEventAdjustment(em, p),
  },
  { method: 'get', path: '/events', handle: (em, p) => listEvents(em, p) },
  { method: 'get', path: '/events/:id', handle: (em, _p, id) => eventOrFail(em, id) },
];

/** Under `/_emulator`: what Stripe's own clock does at the end of a period, on request (scripts, demos). */
export const HELPER_ROUTES: readonly Route[] = [
  {
    method: 'post',
    path: '/subscriptions/:id/renew',
    handle: (em, p, id) => renewSubscription(em, id, { fail: bool(p, 'fail') ?? false }),
  },
];
