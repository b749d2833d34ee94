import type { RequestOptions } from './http.js';
import type { components } from './openapi.js';

/**
 * The REST API's bodies and answers, as `schema/openapi.yaml` describes them (generated into
 * `openapi.ts` by `npm run generate -w @tollgate/client`; CI fails when the two differ).
 */
type Schemas = components['schemas'];
/**
 * One schema by name. Its types are interfaces extending this rather than aliases, so that editors and
 * compiler messages say `Customer`, not the expanded object type.
 */
type Schema<Name extends keyof Schemas> = Schemas[Name];
/** A request body whose fields have defaults (optional fields, whatever the generator's settings). */
type RequestBody<Name extends keyof components['requestBodies']> =
  components['requestBodies'][Name]['content']['application/json'];

export type Metadata = Schemas['Metadata'];
export interface Customer extends Schema<'Customer'> {}
export interface CustomerList extends Schema<'CustomerList'> {
  data: Customer[];
}
export interface CreateCustomerRequest extends Schema<'CreateCustomerRequest'> {}
export interface UpdateCustomerRequest extends Schema<'UpdateCustomerRequest'> {}
export interface Subscription extends Schema<'Subscription'> {}
export interface SubscriptionList extends Schema<'SubscriptionList'> {
  data: Subscription[];
}
export interface CancelSubscriptionRequest extends RequestBody<'CancelSubscriptionRequest'> {}
export interface Entitlements extends Schema<'Entitlements'> {}
export interface EntitlementCheck extends Schema<'EntitlementCheck'> {}
export type CheckoutSessionRequest = Schemas['CheckoutSessionRequest'];
export interface CheckoutSessionResult extends Schema<'CheckoutSessionResult'> {}
export interface Invoice extends Schema<'Invoice'> {}
export interface InvoiceList extends Schema<'InvoiceList'> {
  data: Invoice[];
}
export interface CouponValidationRequest extends Schema<'CouponValidationRequest'> {}
export type CouponValidationResult = Schemas['CouponValidationResult'];
export interface Organization extends Schema<'Organization'> {}
export interface OrganizationList extends Schema<'OrganizationList'> {
  data: Organization[];
}
export interface OrganizationSeats extends Schema<'OrganizationSeats'> {}
export interface InvitationRequest extends RequestBody<'InvitationRequest'> {}
export interface Invitation extends Schema<'Invitation'> {}
export interface InvitationList extends Schema<'InvitationList'> {
  data: Invitation[];
}
export interface Session extends Schema<'Session'> {}
export interface SessionCustomer extends Schema<'SessionCustomer'> {}
export interface VerifyResult extends Schema<'VerifyResult'> {}
export interface SwitchOrganizationResult extends Schema<'SwitchOrganizationResult'> {}
export interface SuccessResult extends Schema<'SuccessResult'> {}
export interface ErrorEnvelope extends Schema<'Error'> {}
export interface WebhookEndpoint extends Schema<'WebhookEndpoint'> {}
export interface WebhookEndpointWithSecret extends Schema<'WebhookEndpointWithSecret'> {}
export interface CreateWebhookEndpointRequest extends Schema<'CreateWebhookEndpointRequest'> {}
export interface UpdateWebhookEndpointRequest extends Schema<'UpdateWebhookEndpointRequest'> {}
export type WebhookEventType = Schemas['WebhookEventType'];
export interface CreditGrant extends Schema<'CreditGrant'> {}
export interface CreditGrantList {
  readonly data: CreditGrant[];
}
export interface Balance extends Schema<'Balance'> {}
export interface FeatureBalance extends Schema<'FeatureBalance'> {}
export interface FeatureBalanceList {
  readonly data: FeatureBalance[];
}
export interface UsageResult extends Schema<'UsageResult'> {}
export interface RecordUsageRequest extends RequestBody<'RecordUsageRequest'> {}
export interface CreateCreditGrantRequest extends RequestBody<'CreateCreditGrantRequest'> {}
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

export interface ChangePlanRequest extends RequestBody<'ChangePlanRequest'> {}
export interface BillingPortalSessionRequest extends Schema<'BillingPortalSessionRequest'> {}
export interface BillingPortalSessionResult extends Schema<'BillingPortalSessionResult'> {}
export interface SubscriptionSyncResult extends Schema<'SubscriptionSyncResult'> {}
export interface DeletedCustomer extends Schema<'DeletedCustomer'> {}
