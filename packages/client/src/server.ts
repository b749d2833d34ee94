import { configurationError } from './errors.js';
import { Transport, type TransportOptions } from './http.js';
import type {
  BillingContext,
  BillingPortalSessionRequest,
  BillingPortalSessionResult,
  CancelSubscriptionRequest,
  ChangePlanRequest,
  CheckoutSessionRequest,
  CheckoutSessionResult,
  CouponValidationRequest,
  CouponValidationResult,
  CreateCustomerRequest,
  CreateWebhookEndpointRequest,
  Customer,
  CustomerList,
  DeletedCustomer,
  EntitlementCheck,
  Entitlements,
  InvoiceList,
  OrganizationList,
  PostOptions,
  Subscription,
  SubscriptionList,
  SubscriptionSyncResult,
  UpdateCustomerRequest,
  UpdateWebhookEndpointRequest,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from './types.js';

export interface TollgateOptions extends TransportOptions {
  /** The app's API key (`tg_sk_…`). Server-side only: it must never reach a browser. */
  readonly apiKey: string;
}

/** Whether this code runs in a web page (a key there would be readable by anyone who opens it). */
function inBrowser(): boolean {
  const g = globalThis as { window?: unknown; document?: unknown };
  return typeof g.window !== 'undefined' && typeof g.document !== 'undefined';
}

const segment = (id: string) => encodeURIComponent(id);

/** The context as query parameters, exactly one of them sent. */
function contextQuery(context: BillingContext): Record<string, string | undefined> {
  return { customerId: context.customerId, organizationId: context.organizationId };
}

/**
 * Tollgate for servers, authenticated with an API key. Every method answers the REST API's JSON
 * (typed) or throws a TollgateError.
 */
export class Tollgate {
  readonly customers;
  readonly checkout;
  readonly subscriptions;
  readonly billingPortal;
  readonly entitlements;
  readonly invoices;
  readonly coupons;
  readonly organizations;
  readonly webhookEndpoints;

  constructor(options: TollgateOptions) {
    if (inBrowser()) {
      throw configurationError(
        'Tollgate (API key client) refuses to run in a browser: an API key in a page is readable by anyone. Use TollgateAuth there.',
      );
    }
    if (typeof options?.apiKey !== 'string' || options.apiKey === '') {
      throw configurationError('apiKey is required');
    }
    const transport = new Transport(options);
    const token = options.apiKey;
    const get = <T>(path: string, query?: Record<string, string | number | undefined>) =>
      transport.request<T>({ method: 'GET', path, query, token });
    const post = <T>(path: string, body: unknown, opts?: PostOptions) =>
      transport.request<T>({ method: 'POST', path, body, token, idempotencyKey: opts?.idempotencyKey });
    const patch = <T>(path: string, body: unknown) =>
      transport.request<T>({ method: 'PATCH', path, body, token });
    const del = <T>(path: string) => transport.request<T>({ method: 'DELETE', path, token });

    this.customers = {
      /** A page of customers, newest first; `email` matches partially. */
      list: (query: { email?: string; limit?: number; offset?: number } = {}) =>
        get<CustomerList>('/v1/customers', query),
      create: (body: CreateCustomerRequest, opts?: PostOptions) =>
        post<Customer>('/v1/customers', body, opts),
      retrieve: (id: string) => get<Customer>(`/v1/customers/${segment(id)}`),
      /** Metadata is merged: keys sent overwrite, a key sent as null is removed, others are kept. */
      update: (id: string, body: UpdateCustomerRequest) =>
        patch<Customer>(`/v1/customers/${segment(id)}`, body),
      delete: (id: string) => del<DeletedCustomer>(`/v1/customers/${segment(id)}`),
      /** Re-reads the customer's billing state from the payment provider. */
      sync: (id: string, opts?: PostOptions) =>
        post<SubscriptionSyncResult>(`/v1/customers/${segment(id)}/sync`, {}, opts),
    };
    this.checkout = {
      /** A hosted checkout page's `url`; the subscription appears when the provider reports payment. */
      createSession: (body: CheckoutSessionRequest, opts?: PostOptions) =>
        post<CheckoutSessionResult>('/v1/checkout/session', body, opts),
    };
    this.subscriptions = {
      /** The newest entitling subscription of the context (404 when there is none). */
      current: (context: BillingContext) =>
        get<Subscription>('/v1/subscriptions/current', contextQuery(context)),
      /** Every subscription of the context, canceled ones included, newest first. */
      list: (context: BillingContext) => get<SubscriptionList>('/v1/subscriptions', contextQuery(context)),
      cancel: (id: string, body: CancelSubscriptionRequest = {}, opts?: PostOptions) =>
        post<Subscription>(`/v1/subscriptions/${segment(id)}/cancel`, body, opts),
      pause: (id: string, opts?: PostOptions) =>
        post<Subscription>(`/v1/subscriptions/${segment(id)}/pause`, {}, opts),
      resume: (id: string, opts?: PostOptions) =>
        post<Subscription>(`/v1/subscriptions/${segment(id)}/resume`, {}, opts),
      changePlan: (id: string, body: ChangePlanRequest, opts?: PostOptions) =>
        post<Subscription>(`/v1/subscriptions/${segment(id)}/change-plan`, body, opts),
    };
    this.billingPortal = {
      createSession: (body: BillingPortalSessionRequest, opts?: PostOptions) =>
        post<BillingPortalSessionResult>('/v1/billing-portal/session', body, opts),
    };
    this.entitlements = {
      get: (context: BillingContext) => get<Entitlements>('/v1/entitlements', contextQuery(context)),
      check: (feature: string, context: BillingContext) =>
        get<EntitlementCheck>(`/v1/entitlements/check/${segment(feature)}`, contextQuery(context)),
    };
    this.invoices = {
      list: (context: BillingContext & { limit?: number }) =>
        get<InvoiceList>('/v1/invoices', { ...contextQuery(context), limit: context.limit }),
    };
    this.coupons = {
      validate: (body: CouponValidationRequest, opts?: PostOptions) =>
        post<CouponValidationResult>('/v1/coupons/validate', body, opts),
    };
    this.organizations = {
      list: (query: { customerId: string }) => get<OrganizationList>('/v1/organizations', query),
    };
    this.webhookEndpoints = {
      /**
       * The answer carries the signing secret, once: store it for verifyWebhook. Tollgate never stores
       * such an answer to replay it, so an `idempotencyKey` here is refused (TollgateError 400).
       */
      create: (body: CreateWebhookEndpointRequest, opts?: PostOptions) =>
        post<WebhookEndpointWithSecret>('/v1/webhook-endpoints', body, opts),
      list: () => get<WebhookEndpointList>('/v1/webhook-endpoints'),
      update: (id: string, body: UpdateWebhookEndpointRequest) =>
        patch<WebhookEndpoint>(`/v1/webhook-endpoints/${segment(id)}`, body),
      /** Answers nothing (204). */
      delete: (id: string) => del<void>(`/v1/webhook-endpoints/${segment(id)}`),
      /** A new signing secret; as with `create`, an `idempotencyKey` is refused (TollgateError 400). */
      rotateSecret: (id: string, opts?: PostOptions) =>
        post<WebhookEndpointWithSecret>(`/v1/webhook-endpoints/${segment(id)}/rotate-secret`, {}, opts),
    };
  }
}
