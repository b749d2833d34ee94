import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { operationBudget } from '../rate-limits/operation-budget.middleware.js';
import type { RateLimitsService } from '../rate-limits/rate-limits.service.js';
import type { CouponsService } from './coupons.service.js';

/** `POST /v1/coupons/validate`: parse → CouponsService → `{valid: true}` or `{valid: false, reason}`. */
export function couponsRouter(coupons: CouponsService, rateLimits: RateLimitsService): Router {
  const router = strictRouter();

  // Coupon codes are guessable: the REST route spends GraphQL validateCoupon's per-caller budget.
  router.post('/coupons/validate', operationBudget(rateLimits, 'validateCoupon'), async (req, res) => {
    const result = await coupons.validateCoupon(req.principal, req.body);
    res.json(result.valid ? { valid: true } : { valid: false, reason: result.reason });
  });

  return router;
}
