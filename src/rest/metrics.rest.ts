import type { Request, RequestHandler } from 'express';
import type { Config } from '../config.js';
import { secretsEqual } from '../core/tokens.js';
import type { Metrics } from '../telemetry/metrics.js';
import { sendError } from './error-envelope.js';
import { authorizationHeader } from './request-guard.js';

/**
 * The route label of a request no route handled: unknown paths, and requests answered before routing
 * (a rejected credential, a rate-limit or HTTPS refusal). One label for all, so a scan of random URLs
 * cannot create a time series per URL.
 */
export const UNROUTED = '(unrouted)';

/**
 * Where each request entered a router or a mounted handler. Express resets `req.baseUrl` when an error
 * leaves a router, so the mount is noted on the way in and the template is assembled when the answer ends.
 */
const mounts = new WeakMap<Request, string>();

/** Placed in front of a mounted router (`app.use('/v1', noteMount, router)`) so its routes get full templates. */
export const noteMount: RequestHandler = (req, _res, next) => {
  mounts.set(req, req.baseUrl);
  next();
};

/** The template of the route that handled `req` (`/v1/customers/:id`), never the raw URL. */
export function routeTemplate(req: Request, mountedHandlers: ReadonlySet<string>): string {
  const mount = mounts.get(req) ?? '';
  const path: unknown = req.route?.path;
  if (typeof path === 'string') return `${mount}${path === '/' && mount !== '' ? '' : path}`;
  // A mounted handler that is not a router (GraphQL) is its own route.
  if (mountedHandlers.has(mount)) return mount;
  return UNROUTED;
}

/** Counts and times every answer by method, route template and status. */
export function httpMetrics(metrics: Metrics, mountedHandlers: ReadonlySet<string>): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = {
        method: req.method,
        route: routeTemplate(req, mountedHandlers),
        status: res.statusCode,
      };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

/**
 * `GET /metrics`, Prometheus text format. Open in development; in production only with the bearer
 * METRICS_TOKEN (compared in constant time), and closed to everyone when METRICS_TOKEN is unset.
 */
export function metricsHandler(metrics: Metrics, config: Config): RequestHandler {
  return async (req, res) => {
    if (config.production) {
      const presented = /^Bearer (.+)$/.exec(singleAuthorization(req) ?? '')?.[1];
      if (
        config.metricsToken === undefined ||
        presented === undefined ||
        !secretsEqual(presented, config.metricsToken)
      ) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
        return sendError(res, 401, 'Metrics require the bearer token set in METRICS_TOKEN');
      }
    }
    const { contentType, body } = await metrics.scrape();
    res.setHeader('Content-Type', contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  };
}

/** The one Authorization header; several are not guessed at (as everywhere, src/rest/request-guard.ts). */
function singleAuthorization(req: Request): string | undefined {
  try {
    return authorizationHeader(req);
  } catch {
    return undefined;
  }
}
