import type { Router } from 'express';
import { segmentDispatch } from '../infra/segment-dispatch.js';
import { isStrictRouter, strictRouter } from '../infra/strict-router.js';
import { analyticsRouter } from '../modules/analytics/analytics.rest.js';
import { authRouter } from '../modules/auth/auth.rest.js';
import { billingPortalRouter } from '../modules/billing-portal/billing-portal.rest.js';
import { checkoutRouter } from '../modules/checkout/checkout.rest.js';
import { couponsRouter } from '../modules/coupons/coupons.rest.js';
import { customersRouter } from '../modules/customers/customers.rest.js';
import { entitlementTokensRouter } from '../modules/entitlement-tokens/entitlement-tokens.rest.js';
import { entitlementsRouter } from '../modules/entitlements/entitlements.rest.js';
import { customerErasureRouter } from '../modules/erasure/customer-erasure.rest.js';
import { invoicesRouter } from '../modules/invoices/invoices.rest.js';
import { meteringRouter } from '../modules/metering/metering.rest.js';
import { organizationsRouter } from '../modules/organizations/organizations.rest.js';
import { subscriptionLifecycleRouter } from '../modules/subscriptions/subscription-lifecycle.rest.js';
import { subscriptionReconcileRouter } from '../modules/subscriptions/subscription-reconcile.rest.js';
import { subscriptionsRouter } from '../modules/subscriptions/subscriptions.rest.js';
import { webhooksRouter } from '../modules/webhooks/webhooks.rest.js';
import type { Services } from '../services.js';

/**
 * Every `/v1` path of the REST facade, mounted in one place so any endpoint is found from here.
 * Routes are thin: parse → service → presenter, and each router gets only the services it calls. `POST /v1/webhooks/stripe` is mounted in app.ts, ahead of
 * the JSON parser, because Stripe's signature covers the raw body.
 */
export function v1Router(services: Services): Router {
  const modules = [
    authRouter(services.magicLinks, services.sessions),
    checkoutRouter(services.checkout),
    customersRouter(services.customers),
    customerErasureRouter(services.customerErasure),
    entitlementsRouter(services.entitlements),
    entitlementTokensRouter(services.entitlementTokens),
    meteringRouter(services.metering),
    subscriptionLifecycleRouter(services.subscriptionLifecycle),
    subscriptionsRouter(services.subscriptions, services.subscriptionHistory),
    invoicesRouter(services.invoices),
    couponsRouter(services.coupons, services.rateLimits),
    organizationsRouter(services.organizations, services.invitations),
    webhooksRouter(services.webhooks),
    billingPortalRouter(services.billingPortal),
    subscriptionReconcileRouter(services.subscriptionReconcile),
    analyticsRouter(services.analytics),
  ];
  for (const module of modules) {
    // A lenient router would let another spelling of its paths dodge per-path rate limits.
    if (!isStrictRouter(module)) throw new Error('every /v1 router must be created with strictRouter()');
  }
  const router = strictRouter();
  // Each request enters only the routers whose paths start with its first segment.
  router.use(segmentDispatch(modules));
  return router;
}
