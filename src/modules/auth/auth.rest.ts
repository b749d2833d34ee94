import type { NextFunction, Request, Response, Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { ENTITLEMENTS_VERSION_HEADER } from '../entitlements/entitlements-version.js';
import { presentSession, presentSwitchedSession, presentVerifyResult } from './auth.presenter.js';
import type { MagicLinksService } from './magic-links.service.js';
import type { SessionsService } from './sessions.service.js';

/**
 * Login answers carry secrets (the token in the redirect, the session token in the body): never cached,
 * and never passed on in a Referer header by the page the browser lands on.
 */
function noStore(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  next();
}

/** The entitlement version of the answer's entitlements, for clients that keep an entitlement token. */
function versionHeader(res: Response, version: number | undefined): void {
  if (version !== undefined) res.setHeader(ENTITLEMENTS_VERSION_HEADER, String(version));
}

/** `/v1/apps/:appId/auth/…`: customer login by magic link, the session lookup, switching and signing out. */
export function authRouter(magicLinks: MagicLinksService, sessions: SessionsService): Router {
  const router = strictRouter();
  router.use('/apps/:appId/auth', noStore);

  router.post('/apps/:appId/auth/magic-link', async (req, res) => {
    await magicLinks.requestMagicLink(req.principal, req.params.appId, req.body);
    res.json({ success: true });
  });

  router.get('/apps/:appId/auth/verify', async (req, res) => {
    const target = await magicLinks.openMagicLink(req.principal, req.params.appId, req.query);
    res.redirect(302, target);
  });

  router.post('/apps/:appId/auth/verify', async (req, res) => {
    const login = await magicLinks.verifyMagicLink(req.principal, req.params.appId, req.body);
    versionHeader(res, login.entitlementsVersion);
    res.json(presentVerifyResult(login));
  });

  router.get('/apps/:appId/auth/session', async (req, res) => {
    const session = await sessions.getSession(req.principal, req.params.appId);
    versionHeader(res, session.entitlementsVersion);
    res.json(presentSession(session));
  });

  router.post('/apps/:appId/auth/switch-organization', async (req, res) => {
    const switched = await sessions.switchOrganization(req.principal, req.body, req.params.appId);
    res.json(presentSwitchedSession(switched));
  });

  router.post('/apps/:appId/auth/sign-out', async (req, res) => {
    await sessions.revokeSession(req.principal, req.params.appId);
    res.json({ success: true });
  });

  return router;
}
