import type { NextFunction, Request, Response, Router } from 'express';
import type { Config } from '../../config.js';
import { ForbiddenError, UnauthorizedError } from '../../core/errors.js';
import type { OperatorIdentity, Principal } from '../../core/principal.js';
import { strictRouter } from '../../infra/strict-router.js';
import { requestProtocol } from '../../rest/transport-security.js';
import {
  csrfTokenMatches,
  csrfTokenOf,
  OPERATOR_SESSION_PREFIX,
  type OperatorSignInService,
} from './operator-sign-in.service.js';

/** The header a dashboard page sends its anti-forgery token in. */
export const CSRF_HEADER = 'x-csrf-token';

/**
 * The cookie's name. `__Host-` in production: browsers then accept it only with `Secure`, `Path=/` and
 * no `Domain`, so no other host (a sibling subdomain) can set or shadow it.
 */
export function operatorCookieName(production: boolean): string {
  return production ? '__Host-tollgate_operator' : 'tollgate_operator';
}

function cookieAttributes(production: boolean): string {
  // Host-only (no Domain), never readable by scripts, never sent on a cross-site request.
  return `Path=/; HttpOnly; SameSite=Strict${production ? '; Secure' : ''}`;
}

/** The operator cookie's value, if the request carries one. */
export function operatorCookie(req: Request, production: boolean): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const name = operatorCookieName(production);
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    if (part.slice(0, at).trim() !== name) continue;
    const value = part.slice(at + 1).trim();
    return value.startsWith(OPERATOR_SESSION_PREFIX) ? value : undefined;
  }
  return undefined;
}

/** Where the operator cookie counts as a credential: GraphQL (the dashboard's data) and signing out. */
const COOKIE_PATHS = new Set(['/graphql', '/dashboard/session']);

/**
 * Whether a cookie-carrying request comes from Tollgate's own pages: its `Origin` (sent by browsers on
 * every POST) must be Tollgate's own, a cross-site fetch (Sec-Fetch-Site) is refused, and the session's
 * anti-forgery token must be in the header, which no other origin can read or set on a credentialed
 * request (CORS never allows credentials here).
 */
function assertSameOrigin(req: Request, publicBaseUrl: string): void {
  const origin = req.headers.origin;
  if (typeof origin === 'string') {
    const own = new URL(publicBaseUrl).origin;
    if (origin !== own && origin !== `${requestProtocol(req)}://${req.headers.host}`) {
      throw new ForbiddenError('Cross-origin requests with the operator cookie are refused');
    }
  }
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') {
    throw new ForbiddenError('Cross-site requests with the operator cookie are refused');
  }
}

/**
 * The principal of a request that sends no Authorization header but the operator cookie, on the paths
 * where the cookie counts; undefined otherwise. A foreign origin or a missing or wrong anti-forgery token
 * → 403; a session that has ended → 401.
 */
export async function operatorPrincipal(
  req: Request,
  signIn: OperatorSignInService,
  config: Pick<Config, 'production' | 'publicBaseUrl'>,
): Promise<Principal | undefined> {
  if (!COOKIE_PATHS.has(req.path) || req.method === 'GET' || req.method === 'HEAD') return undefined;
  const token = operatorCookie(req, config.production);
  if (token === undefined) return undefined;
  assertSameOrigin(req, config.publicBaseUrl);
  const sent = req.headers[CSRF_HEADER];
  if (typeof sent !== 'string' || !csrfTokenMatches(token, sent)) {
    throw new ForbiddenError('The request lacks the dashboard session’s anti-forgery token');
  }
  const operator = await signIn.resolveSession(token);
  if (!operator) throw new UnauthorizedError('The operator session has ended: sign in again');
  return { kind: 'admin', operator };
}

function presentOperator(operator: OperatorIdentity) {
  return { id: operator.id, email: operator.email, role: operator.role };
}

function noStore(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  next();
}

/**
 * The dashboard's operator sign-in: `POST /dashboard/sign-in` (e-mails a link), `POST /dashboard/session`
 * (the link's token for the cookie), `GET /dashboard/session` (who is signed in, with the anti-forgery
 * token and whether the admin-token sign-in is offered), `DELETE /dashboard/session` (signing out).
 */
export function operatorSessionRouter(signIn: OperatorSignInService, config: Config): Router {
  const router = strictRouter();
  const production = config.production;
  const clear = `${operatorCookieName(production)}=; ${cookieAttributes(production)}; Max-Age=0`;
  router.use('/dashboard', noStore);

  router.post('/dashboard/sign-in', async (req, res) => {
    await signIn.requestSignIn(req.body, req.ip ?? 'unknown');
    res.json({ success: true });
  });

  router.post('/dashboard/session', async (req, res) => {
    assertSameOrigin(req, config.publicBaseUrl);
    const signedIn = await signIn.completeSignIn(req.body, {
      ip: req.ip ?? null,
      userAgent: req.headers['user-agent'] ?? null,
    });
    res.setHeader(
      'Set-Cookie',
      `${operatorCookieName(production)}=${signedIn.sessionToken}; ${cookieAttributes(production)}; Max-Age=${
        config.operators.sessionMaxDays * 86_400
      }`,
    );
    res.json({ operator: presentOperator(signedIn.operator), csrfToken: signedIn.csrfToken });
  });

  router.get('/dashboard/session', async (req, res) => {
    const token = operatorCookie(req, production);
    const operator = token === undefined ? undefined : await signIn.resolveSession(token);
    if (token !== undefined && !operator) res.setHeader('Set-Cookie', clear);
    res.json({
      operator: operator ? presentOperator(operator) : null,
      csrfToken: operator && token ? csrfTokenOf(token) : null,
      tokenSignIn: config.operators.tokenSignIn,
    });
  });

  router.delete('/dashboard/session', async (req, res) => {
    // Reached with a valid cookie and anti-forgery token only (see operatorPrincipal).
    const token = operatorCookie(req, production);
    if (req.principal.kind !== 'admin' || !req.principal.operator || token === undefined) {
      throw new UnauthorizedError('Not signed in as an operator');
    }
    await signIn.signOut(token);
    res.setHeader('Set-Cookie', clear);
    res.json({ success: true });
  });

  return router;
}
