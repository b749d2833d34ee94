import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentEntitlements, presentFeatureCheck } from './entitlements.presenter.js';
import type { EntitlementsService } from './entitlements.service.js';

/** `/v1/entitlements…`: parse → EntitlementsService → presenter. */
export function entitlementsRouter(entitlements: EntitlementsService): Router {
  const router = strictRouter();

  router.get('/entitlements', async (req, res) => {
    res.json(presentEntitlements(await entitlements.getEntitlements(req.principal, req.query)));
  });

  router.get('/entitlements/check/:feature', async (req, res) => {
    const check = await entitlements.checkFeature(req.principal, req.params.feature, req.query);
    res.json(presentFeatureCheck(check));
  });

  return router;
}
