import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentSubscription } from './subscription.presenter.js';
import type { SubscriptionLifecycleService } from './subscription-lifecycle.service.js';

/**
 * `POST /v1/subscriptions/:id/{cancel,pause,resume,change-plan}` and the plan change's preview:
 * parse → SubscriptionLifecycleService → presenter.
 */
export function subscriptionLifecycleRouter(lifecycle: SubscriptionLifecycleService): Router {
  const router = strictRouter();

  router.post('/subscriptions/:id/cancel', async (req, res) => {
    res.json(presentSubscription(await lifecycle.cancelSubscription(req.principal, req.params.id, req.body)));
  });

  router.post('/subscriptions/:id/pause', async (req, res) => {
    res.json(presentSubscription(await lifecycle.pauseSubscription(req.principal, req.params.id, req.body)));
  });

  router.post('/subscriptions/:id/resume', async (req, res) => {
    res.json(presentSubscription(await lifecycle.resumeSubscription(req.principal, req.params.id, req.body)));
  });

  router.post('/subscriptions/:id/change-plan', async (req, res) => {
    res.json(
      presentSubscription(await lifecycle.changeSubscriptionPlan(req.principal, req.params.id, req.body)),
    );
  });

  router.post('/subscriptions/:id/change-plan/preview', async (req, res) => {
    res.json(await lifecycle.previewSubscriptionPlanChange(req.principal, req.params.id, req.body));
  });

  return router;
}
