import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { ENTITLEMENTS_VERSION_HEADER } from '../entitlements/entitlements-version.js';
import type { EntitlementTokensService } from './entitlement-tokens.service.js';

/**
 * Seconds a JWKS answer may be cached: well within ROTATION_GRACE_MS, so a key rotated in is seen by
 * every cache before it signs.
 */
const JWKS_MAX_AGE = 300;

/** Entitlement tokens: issuance (a credential of the app) and the app's public keys (anyone). */
export function entitlementTokensRouter(tokens: EntitlementTokensService): Router {
  const router = strictRouter();

  router.post('/apps/:appId/auth/entitlement-token', async (req, res) => {
    const issued = await tokens.issue(req.principal, req.params.appId, req.body);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader(ENTITLEMENTS_VERSION_HEADER, String(issued.ev));
    res.json({ token: issued.token, expiresAt: issued.expiresAt.toISOString() });
  });

  router.get('/apps/:appId/.well-known/jwks.json', async (req, res) => {
    const jwks = await tokens.jwks(req.params.appId);
    res.setHeader('Cache-Control', `public, max-age=${JWKS_MAX_AGE}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.json(jwks);
  });

  return router;
}
