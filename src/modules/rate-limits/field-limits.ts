import type { FieldLimit } from './rate-limits.service.js';

/**
 * Per-caller budgets of the GraphQL operations that cost money, send e-mail or invite guessing, on
 * top of the per-request budget. Keyed by root field name (Query or Mutation); a field added later
 * under one of these names is limited without further wiring.
 */
export const FIELD_LIMITS: Readonly<Record<string, FieldLimit>> = {
  // Each call may send an e-mail; callers are mostly browsers (counted per IP).
  requestMagicLink: { max: 20, window: '1m' },
  // Each call e-mails an invitation (an organization may also send at most 100 a day).
  inviteToOrganization: { max: 30, window: '1m' },
  // Each call creates a session at the payment provider.
  createCheckoutSession: { max: 60, window: '1m' },
  // Coupon codes are guessable: bound how fast they can be tried.
  validateCoupon: { max: 30, window: '1m' },
  // Each call creates a portal session (and may update the app's portal configuration) at the provider.
  createBillingPortalSession: { max: 60, window: '1m' },
  // Each call reads from the provider: the previewed invoice, or every subscription of a Stripe customer.
  previewSubscriptionPlanChange: { max: 60, window: '1m' },
  syncCustomerSubscriptions: { max: 30, window: '1m' },
  syncOrganizationSubscriptions: { max: 30, window: '1m' },
};
