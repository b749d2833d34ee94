import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentAnalytics } from './analytics.presenter.js';
import type { AnalyticsService } from './analytics.service.js';

/** `GET /v1/analytics`: parse → AnalyticsService → presenter. */
export function analyticsRouter(analytics: AnalyticsService): Router {
  const router = strictRouter();

  router.get('/analytics', async (req, res) => {
    res.json(presentAnalytics(await analytics.getAnalytics(req.principal, req.query)));
  });

  return router;
}
