import { ApiRequester } from './api.js';
import { configurationError } from './errors.js';
import { inBrowser, Transport, type TransportOptions } from './http.js';
import {
  BillingPortal,
  Checkout,
  Coupons,
  EntitlementsResource,
  Invoices,
  Subscriptions,
} from './resources/billing.js';
import { Customers } from './resources/customers.js';
import { Organizations } from './resources/organizations.js';
import { WebhookEndpoints } from './resources/webhook-endpoints.js';

export interface TollgateOptions extends TransportOptions {
  /** The app's API key (`tg_sk_…`). Server-side only: it must never reach a browser. */
  readonly apiKey: string;
}

/**
 * Tollgate for servers, authenticated with an API key. Every method answers the REST API's JSON
 * (typed) or throws a TollgateError; each takes, last, the options of its call (`timeout`, `signal`,
 * `maxRetries`, and `idempotencyKey` for a POST).
 */
export class Tollgate {
  readonly customers: Customers;
  readonly checkout: Checkout;
  readonly subscriptions: Subscriptions;
  readonly billingPortal: BillingPortal;
  readonly entitlements: EntitlementsResource;
  readonly invoices: Invoices;
  readonly coupons: Coupons;
  readonly organizations: Organizations;
  readonly webhookEndpoints: WebhookEndpoints;

  constructor(options: TollgateOptions) {
    if (inBrowser()) {
      throw configurationError(
        'Tollgate (API key client) refuses to run in a browser: an API key in a page is readable by anyone. Use TollgateAuth there.',
      );
    }
    if (typeof options?.apiKey !== 'string' || options.apiKey === '') {
      throw configurationError('apiKey is required');
    }
    const api = new ApiRequester(new Transport(options), options.apiKey);
    this.customers = new Customers(api);
    this.checkout = new Checkout(api);
    this.subscriptions = new Subscriptions(api);
    this.billingPortal = new BillingPortal(api);
    this.entitlements = new EntitlementsResource(api);
    this.invoices = new Invoices(api);
    this.coupons = new Coupons(api);
    this.organizations = new Organizations(api);
    this.webhookEndpoints = new WebhookEndpoints(api);
  }
}
