import { Router } from 'express';
import { authRouter } from '../modules/auth/auth.rest.js';
import { entitlementsRouter } from '../modules/entitlements/entitlements.rest.js';
import { customersRouter } from '../modules/customers/customers.rest.js';
import type { Services } from '../services.js';

/**
 * Every `/v1` path of the REST facade, mounted in one place so any endpoint is found from here.
 * Routes are thin: parse → service → presenter.
 */
export function v1Router(services: Services): Router {
  const router = Router();
  router.use(authRouter(services));
  router.use(customersRouter(services));
  router.use(entitlementsRouter(services));
  return router;
}
