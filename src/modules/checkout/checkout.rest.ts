import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import type { CheckoutService } from './checkout.service.js';

/** `POST /v1/checkout/session`: parse → CheckoutService → `{url}`. */
export function checkoutRouter(checkout: CheckoutService): Router {
  const router = strictRouter();

  router.post('/checkout/session', async (req, res) => {
    const { url } = await checkout.createCheckoutSession(req.principal, req.body);
    res.status(200).json({ url });
  });

  return router;
}
