import type { Router } from 'express';
import { strictRouter } from '../../rest/router.js';
import type { Services } from '../../services.js';
import { presentEntitlements, presentFeatureCheck } from './entitlements.presenter.js';

/** `/v1/entitlements…`: parse → EntitlementsService → presenter. */
export function entitlementsRouter(services: Services): Router {
  const router = strictRouter();

  router.get('/entitlements', async (req, res) => {
    res.json(presentEntitlements(await services.entitlements.getEntitlements(req.principal, req.query)));
  });

  router.get('/entitlements/check/:feature', async (req, res) => {
    const check = await services.entitlements.checkFeature(req.principal, req.params.feature, req.query);
    res.json(presentFeatureCheck(check));
  });

  return router;
}
