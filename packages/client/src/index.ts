export { type EntitlementToken, TollgateAuth, type TollgateAuthOptions } from './auth.js';
export {
  CLOCK_TOLERANCE_SECONDS,
  type EntitlementClaims,
  type EntitlementValue,
  type EntitlementVerifierOptions,
  entitlementVerifier,
  VerifiedEntitlements,
} from './entitlement-token.js';
export { type RateLimit, TollgateError } from './errors.js';
export { type RequestOptions, type TransportOptions, USER_AGENT } from './http.js';
export type { components, operations, paths } from './openapi.js';
export { type OffsetPage, PagePromise } from './pagination.js';
export type {
  BillingPortal,
  Checkout,
  Coupons,
  EntitlementsResource,
  Invoices,
  Subscriptions,
} from './resources/billing.js';
export type { CustomerListQuery, Customers } from './resources/customers.js';
export type { Balances, CreditGrants, Usage } from './resources/metering.js';
export type { Organizations } from './resources/organizations.js';
export type { WebhookEndpoints } from './resources/webhook-endpoints.js';
export { Tollgate, type TollgateOptions } from './server.js';
export type * from './types.js';
export { VERSION } from './version.js';
export type * from './webhook-events.js';
export { verifyWebhook } from './webhooks.js';
