import type { components } from './openapi.js';

/**
 * The REST API's bodies and answers, as `schema/openapi.yaml` describes them (generated into
 * `openapi.ts` by `npm run generate -w @tollgate/client`; CI fails when the two differ).
 */
type Schemas = components['schemas'];

export type Metadata = Schemas['Metadata'];
export type Customer = Schemas['Customer'];
export type CustomerList = Schemas['CustomerList'];
export type CreateCustomerRequest = Schemas['CreateCustomerRequest'];
export type UpdateCustomerRequest = Schemas['UpdateCustomerRequest'];
export type Subscription = Schemas['Subscription'];
export type SubscriptionList = Schemas['SubscriptionList'];
export type CancelSubscriptionRequest = Schemas['CancelSubscriptionRequest'];
export type Entitlements = Schemas['Entitlements'];
export type EntitlementCheck = Schemas['EntitlementCheck'];
export type CheckoutSessionRequest = Schemas['CheckoutSessionRequest'];
export type CheckoutSessionResult = Schemas['CheckoutSessionResult'];
export type Invoice = Schemas['Invoice'];
export type InvoiceList = Schemas['InvoiceList'];
export type CouponValidationRequest = Schemas['CouponValidationRequest'];
export type CouponValidationResult = Schemas['CouponValidationResult'];
export type Organization = Schemas['Organization'];
export type OrganizationList = Schemas['OrganizationList'];
export type Session = Schemas['Session'];
export type SessionCustomer = Schemas['SessionCustomer'];
export type VerifyResult = Schemas['VerifyResult'];
export type SwitchOrganizationResult = Schemas['SwitchOrganizationResult'];
export type SuccessResult = Schemas['SuccessResult'];
export type ErrorEnvelope = Schemas['Error'];

/** Whose billing an API key asks about: exactly one customer or one organization. */
export type BillingContext =
  | { readonly customerId: string; readonly organizationId?: undefined }
  | { readonly organizationId: string; readonly customerId?: undefined };

/** Options of every POST: an `Idempotency-Key`, so a retried call is applied once. */
export interface PostOptions {
  readonly idempotencyKey?: string;
}

/*
 * Operations whose REST paths are documented by the billing-moves and outbound-webhooks parts of the API.
 * Until `schema/openapi.yaml` describes them, their shapes are declared here (loosely: unknown fields are
 * kept); regenerate `openapi.ts` and point these at its schemas when it does.
 */

export interface ChangePlanRequest {
  readonly planId: string;
  readonly prorationBehavior?: 'create_prorations' | 'none' | 'always_invoice';
}

export interface BillingPortalSessionRequest {
  readonly customerId?: string;
  readonly organizationId?: string;
  readonly returnUrl: string;
}

export interface BillingPortalSessionResult {
  readonly url: string;
}

export interface SyncResult {
  readonly [key: string]: unknown;
}

export interface WebhookEndpoint {
  readonly id: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly [key: string]: unknown;
}

export interface WebhookEndpointWithSecret extends WebhookEndpoint {
  readonly secret?: string;
}

export interface CreateWebhookEndpointRequest {
  readonly url: string;
  readonly events?: readonly string[];
  readonly description?: string;
  readonly [key: string]: unknown;
}

export type UpdateWebhookEndpointRequest = Partial<CreateWebhookEndpointRequest>;
