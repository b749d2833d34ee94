import type { RequestOptions } from './http.js';
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
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type CreateWebhookEndpointRequest = Schemas['CreateWebhookEndpointRequest'];
export type UpdateWebhookEndpointRequest = Schemas['UpdateWebhookEndpointRequest'];
export type WebhookEventType = Schemas['WebhookEventType'];
/** `GET /v1/webhook-endpoints` (its list schema is inline in the document). */
export interface WebhookEndpointList {
  readonly data: WebhookEndpoint[];
}

/** Whose billing an API key asks about: exactly one customer or one organization. */
export type BillingContext =
  | { readonly customerId: string; readonly organizationId?: undefined }
  | { readonly organizationId: string; readonly customerId?: undefined };

/** Options of every POST: those of every call, and an `Idempotency-Key` so a retried call is applied once. */
export interface PostOptions extends RequestOptions {
  readonly idempotencyKey?: string;
}

export type ChangePlanRequest = Schemas['ChangePlanRequest'];
export type BillingPortalSessionRequest = Schemas['BillingPortalSessionRequest'];
export type BillingPortalSessionResult = Schemas['BillingPortalSessionResult'];
export type SubscriptionSyncResult = Schemas['SubscriptionSyncResult'];
export type DeletedCustomer = Schemas['DeletedCustomer'];
