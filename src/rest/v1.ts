import { Router } from 'express';
import { authRouter } from '../modules/auth/auth.rest.js';
import { checkoutRouter } from '../modules/checkout/checkout.rest.js';
import { customersRouter } from '../modules/customers/customers.rest.js';
import { entitlementsRouter } from '../modules/entitlements/entitlements.rest.js';
import { subscriptionLifecycleRouter } from '../modules/subscriptions/subscription-lifecycle.rest.js';
import { subscriptionsRouter } from '../modules/subscriptions/subscriptions.rest.js';
import type { Services } from '../services.js';

/**
 * Every `/v1` path of the REST facade, mounted in one place so any endpoint is found from here.
 * Routes are thin: parse → service → presenter, and each router gets only the services it calls. `POST /v1/webhooks/stripe` is mounted in app.ts, ahead of
 * the JSON parser, because Stripe's signature covers the raw body.
 */
export function v1Router(services: Services): Router {
  const router = Router();
  router.use(authRouter(services.magicLinks, services.sessions));
  router.use(checkoutRouter(services.checkout));
  router.use(customersRouter(services.customers));
  router.use(entitlementsRouter(services.entitlements));
  router.use(subscriptionLifecycleRouter(services.subscriptionLifecycle));
  router.use(subscriptionsRouter(services.subscriptions));
  return router;
}
