import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentSubscription } from './subscription.presenter.js';
import type { SubscriptionHistoryService } from './subscription-history.service.js';
import type { SubscriptionsService } from './subscriptions.service.js';

/** `GET /v1/subscriptions` (history) and `GET /v1/subscriptions/current`: parse → service → presenter. */
export function subscriptionsRouter(
  subscriptions: SubscriptionsService,
  history: SubscriptionHistoryService,
): Router {
  const router = strictRouter();

  router.get('/subscriptions', async (req, res) => {
    const list = await history.listSubscriptions(req.principal, req.query);
    res.json({ data: list.map(presentSubscription) });
  });

  router.get('/subscriptions/current', async (req, res) => {
    const subscription = await subscriptions.getCurrentSubscription(req.principal, req.query);
    res.json(presentSubscription(subscription));
  });

  return router;
}
