import type { Router } from 'express';
import { strictRouter } from '../../rest/router.js';
import type { Services } from '../../services.js';

/** `POST /v1/checkout/session`: parse → CheckoutService → `{url}`. */
export function checkoutRouter(services: Services): Router {
  const router = strictRouter();

  router.post('/checkout/session', async (req, res) => {
    const { url } = await services.checkout.createCheckoutSession(req.principal, req.body);
    res.status(200).json({ url });
  });

  return router;
}
