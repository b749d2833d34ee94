import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError } from '../core/errors.js';
import { isLocalhostOrigin } from '../modules/apps/callback-url.js';
import { requestProtocol } from './transport-security.js';

/** What the browser may read of an answer beyond the safelisted headers. */
const EXPOSED_HEADERS =
  'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Tollgate-Entitlements-Version';
const ALLOWED_METHODS = 'GET, POST, PATCH, DELETE';
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key';
/** Seconds a browser may reuse a preflight's answer (Chromium caps it at two hours). */
const PREFLIGHT_MAX_AGE = '600';

/** An app's public key set: readable from any page (no credential, nothing private). */
const PUBLIC_PATH = /^\/v1\/apps\/[^/]+\/\.well-known\/jwks\.json$/;

/** The app a `/v1/apps/:appId/…` path names. */
const APP_PATH = /^\/v1\/apps\/([^/]+)\//;

export interface CorsOptions {
  /** Whether a page at `origin` may call for app `appId` (any app when undefined). */
  readonly allowsOrigin: (origin: string, appId: string | undefined) => Promise<boolean>;
  /** In development any `http://localhost` page may call, as any localhost callback URL is allowed. */
  readonly production: boolean;
  /** Tollgate's own origin as its links name it; its pages (GraphiQL, the dashboard) are not foreign. */
  readonly publicBaseUrl: string;
}

/** A CORS preflight: OPTIONS with `Access-Control-Request-Method` (RFC: Fetch standard, CORS protocol). */
export function isPreflight(req: Request): boolean {
  return req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
}

/**
 * Browsers (CORS). A request with an `Origin` that is not Tollgate's own is granted (the origin echoed,
 * the rate-limit headers exposed) when the origin is that of one of its app's allowed callback URL
 * patterns; preflights are answered here, before any budget is spent. An API key or the admin token
 * sent from a foreign page is refused (403, after counting): such a secret must never live in a page.
 * Runs after the credential is resolved, so the app of a session token is known; preflights, which carry
 * no credential, are answered by the same rule ahead of every route (see `createHttpApp`).
 */
export function cors(options: CorsOptions): RequestHandler {
  const ownOrigin = new URL(options.publicBaseUrl).origin;
  return async (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (typeof origin !== 'string') return next();
    res.vary('Origin');
    if (origin === ownOrigin || origin === `${requestProtocol(req)}://${req.headers.host}`) return next();
    if (PUBLIC_PATH.test(req.path)) {
      res.setHeader('Access-Control-Allow-Origin', '*');
      if (isPreflight(req)) {
        res.setHeader('Access-Control-Allow-Methods', 'GET');
        res.setHeader('Access-Control-Max-Age', PREFLIGHT_MAX_AGE);
        res.status(204).end();
        return;
      }
      return next();
    }
    try {
      const principal = req.principal;
      const appId =
        APP_PATH.exec(req.path)?.[1] ??
        (principal.kind === 'apiKey' || principal.kind === 'session' ? principal.appId : undefined);
      const allowed =
        (!options.production && isLocalhostOrigin(origin)) || (await options.allowsOrigin(origin, appId));
      if (isPreflight(req)) {
        if (allowed) {
          res.setHeader('Access-Control-Allow-Origin', origin);
          res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
          res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
          res.setHeader('Access-Control-Max-Age', PREFLIGHT_MAX_AGE);
        }
        res.status(204).end();
        return;
      }
      if (allowed) {
        res.setHeader('Access-Control-Allow-Origin', origin);
        res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
      }
      if (principal.kind === 'apiKey' || principal.kind === 'admin') {
        // Answered by the rate-limit middleware once counted, like a rejected credential.
        req.credentialError ??= new ForbiddenError(
          'API keys must not be used from a browser page: call Tollgate from your server',
        );
      }
      next();
    } catch (error) {
      next(error);
    }
  };
}
