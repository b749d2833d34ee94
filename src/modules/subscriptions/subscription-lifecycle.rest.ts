import type { Router } from 'express';
import { strictRouter } from '../../rest/router.js';
import type { Services } from '../../services.js';
import { presentSubscription } from './subscription.presenter.js';

/** `POST /v1/subscriptions/:id/{cancel,pause,resume}`: parse → SubscriptionLifecycleService → presenter. */
export function subscriptionLifecycleRouter(services: Services): Router {
  const router = strictRouter();
  const lifecycle = services.subscriptionLifecycle;

  router.post('/subscriptions/:id/cancel', async (req, res) => {
    res.json(presentSubscription(await lifecycle.cancelSubscription(req.principal, req.params.id, req.body)));
  });

  router.post('/subscriptions/:id/pause', async (req, res) => {
    res.json(presentSubscription(await lifecycle.pauseSubscription(req.principal, req.params.id, req.body)));
  });

  router.post('/subscriptions/:id/resume', async (req, res) => {
    res.json(presentSubscription(await lifecycle.resumeSubscription(req.principal, req.params.id, req.body)));
  });

  return router;
}
