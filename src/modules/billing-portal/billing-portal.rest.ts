import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import type { BillingPortalService } from './billing-portal.service.js';

/** `POST /v1/billing-portal/session`: parse → BillingPortalService → `{url}`. */
export function billingPortalRouter(portal: BillingPortalService): Router {
  const router = strictRouter();

  router.post('/billing-portal/session', async (req, res) => {
    const { url } = await portal.createPortalSession(req.principal, req.body);
    res.status(200).json({ url });
  });

  return router;
}
