import type { Router } from 'express';
import { strictRouter } from '../../rest/router.js';
import type { Services } from '../../services.js';
import { presentSubscription } from './subscription.presenter.js';

/** `GET /v1/subscriptions/current`: parse → SubscriptionsService → presenter. */
export function subscriptionsRouter(services: Services): Router {
  const router = strictRouter();

  router.get('/subscriptions/current', async (req, res) => {
    const subscription = await services.subscriptions.getCurrentSubscription(req.principal, req.query);
    res.json(presentSubscription(subscription));
  });

  return router;
}
