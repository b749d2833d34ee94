import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentSubscription } from './subscription.presenter.js';
import type { SubscriptionReconcileService, SyncResult } from './subscription-reconcile.service.js';

/** `POST /v1/customers/:id/sync` and `POST /v1/organizations/:id/sync`: parse → service → presenter. */
export function subscriptionReconcileRouter(reconcile: SubscriptionReconcileService): Router {
  const router = strictRouter();

  router.post('/customers/:id/sync', async (req, res) => {
    res.json(presentSync(await reconcile.syncCustomer(req.principal, req.params.id, req.body)));
  });

  router.post('/organizations/:id/sync', async (req, res) => {
    res.json(presentSync(await reconcile.syncOrganization(req.principal, req.params.id, req.body)));
  });

  return router;
}

function presentSync(result: SyncResult) {
  return {
    subscriptions: result.subscriptions.map(presentSubscription),
    skipped: result.skipped.map(({ stripeSubscriptionId, reason }) => ({ stripeSubscriptionId, reason })),
  };
}
