import { type ApiRequester, segment } from '../api.js';
import type { RequestOptions } from '../http.js';
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
  EntitlementCheck,
  Entitlements,
  InvoiceList,
  PostOptions,
  Subscription,
  SubscriptionList,
} from '../types.js';

/** The context as query parameters, exactly one of them sent. */
function contextQuery(context: BillingContext): Record<string, string | undefined> {
  return { customerId: context.customerId, organizationId: context.organizationId };
}

/** `/v1/checkout/session`. */
export class Checkout {
  constructor(private readonly api: ApiRequester) {}

  /**
   * A hosted checkout page's `url`; the subscription appears when the provider reports payment. A buyer
   * that already has a live subscription gets 409 (change its plan) unless the app allows several.
   */
  createSession(body: CheckoutSessionRequest, options?: PostOptions): Promise<CheckoutSessionResult> {
    return this.api.post<CheckoutSessionResult>('/v1/checkout/session', body, options);
  }
}

/** `/v1/subscriptions`. */
export class Subscriptions {
  constructor(private readonly api: ApiRequester) {}

  /** The newest entitling subscription of the context (404 when there is none). */
  current(context: BillingContext, options?: RequestOptions): Promise<Subscription> {
    return this.api.get<Subscription>('/v1/subscriptions/current', contextQuery(context), options);
  }

  /** Every subscription of the context, canceled ones included, newest first. */
  list(context: BillingContext, options?: RequestOptions): Promise<SubscriptionList> {
    return this.api.get<SubscriptionList>('/v1/subscriptions', contextQuery(context), options);
  }

  cancel(id: string, body: CancelSubscriptionRequest = {}, options?: PostOptions): Promise<Subscription> {
    return this.api.post<Subscription>(`/v1/subscriptions/${segment(id)}/cancel`, body, options);
  }

  pause(id: string, options?: PostOptions): Promise<Subscription> {
    return this.api.post<Subscription>(`/v1/subscriptions/${segment(id)}/pause`, {}, options);
  }

  resume(id: string, options?: PostOptions): Promise<Subscription> {
    return this.api.post<Subscription>(`/v1/subscriptions/${segment(id)}/resume`, {}, options);
  }

  changePlan(id: string, body: ChangePlanRequest, options?: PostOptions): Promise<Subscription> {
    return this.api.post<Subscription>(`/v1/subscriptions/${segment(id)}/change-plan`, body, options);
  }
}

/** `/v1/billing-portal/session`. */
export class BillingPortal {
  constructor(private readonly api: ApiRequester) {}

  createSession(
    body: BillingPortalSessionRequest,
    options?: PostOptions,
  ): Promise<BillingPortalSessionResult> {
    return this.api.post<BillingPortalSessionResult>('/v1/billing-portal/session', body, options);
  }
}

/** `/v1/entitlements`. */
export class EntitlementsResource {
  constructor(private readonly api: ApiRequester) {}

  get(context: BillingContext, options?: RequestOptions): Promise<Entitlements> {
    return this.api.get<Entitlements>('/v1/entitlements', contextQuery(context), options);
  }

  check(feature: string, context: BillingContext, options?: RequestOptions): Promise<EntitlementCheck> {
    return this.api.get<EntitlementCheck>(
      `/v1/entitlements/check/${segment(feature)}`,
      contextQuery(context),
      options,
    );
  }
}

/** `/v1/invoices`. */
export class Invoices {
  constructor(private readonly api: ApiRequester) {}

  list(
    context: BillingContext & { readonly limit?: number },
    options?: RequestOptions,
  ): Promise<InvoiceList> {
    return this.api.get<InvoiceList>(
      '/v1/invoices',
      { ...contextQuery(context), limit: context.limit },
      options,
    );
  }
}

/** `/v1/coupons/validate`. */
export class Coupons {
  constructor(private readonly api: ApiRequester) {}

  /** `{ valid: true }` or `{ valid: false, reason }`. */
  validate(body: CouponValidationRequest, options?: PostOptions): Promise<CouponValidationResult> {
    return this.api.post<CouponValidationResult>('/v1/coupons/validate', body, options);
  }
}
