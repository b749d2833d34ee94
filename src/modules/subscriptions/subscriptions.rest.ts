import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentSubscription } from './subscription.presenter.js';
import type { SubscriptionsService } from './subscriptions.service.js';

/** `GET /v1/subscriptions/current`: parse → SubscriptionsService → presenter. */
export function subscriptionsRouter(subscriptions: SubscriptionsService): Router {
  const router = strictRouter();

  router.get('/subscriptions/current', async (req, res) => {
    const subscription = await subscriptions.getCurrentSubscription(req.principal, req.query);
    res.json(presentSubscription(subscription));
  });

  return router;
}
