import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentFeatureBalance, presentGrant, presentUsage } from './metering.presenter.js';
import type { MeteringService } from './metering.service.js';

/** `/v1/usage…`, `/v1/credit-grants…`, `/v1/balances`: parse → MeteringService → presenter. */
export function meteringRouter(metering: MeteringService): Router {
  const router = strictRouter();

  router.post('/usage', async (req, res) => {
    res.json(presentUsage(await metering.recordUsage(req.principal, req.body)));
  });

  router.post('/usage/:id/refund', async (req, res) => {
    res.json({ balance: presentFeatureBalance(await metering.refundUsage(req.principal, req.params.id)) });
  });

  router.post('/credit-grants', async (req, res) => {
    res.status(201).json(presentGrant(await metering.createGrant(req.principal, req.body)));
  });

  router.get('/credit-grants', async (req, res) => {
    res.json({ data: (await metering.listGrants(req.principal, req.query)).map(presentGrant) });
  });

  router.post('/credit-grants/:id/void', async (req, res) => {
    res.json(presentGrant(await metering.voidGrant(req.principal, req.params.id)));
  });

  router.get('/balances', async (req, res) => {
    res.json({ data: (await metering.getBalances(req.principal, req.query)).map(presentFeatureBalance) });
  });

  return router;
}
