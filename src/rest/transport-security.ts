import type { TLSSocket } from 'node:tls';
import type { Request, RequestHandler } from 'express';
import type { Config } from '../config.js';
import { sendError } from './error-envelope.js';

/**
 * Answered over plain HTTP too. Load-balancer and container probes carry no credential; Prometheus scrapes
 * each instance directly on the private network (through the proxy it would reach a random one), and
 * `/metrics` has its own bearer token.
 */
export const PLAIN_HTTP_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** One year, subdomains included: what HSTS preload lists ask for, and long enough to matter. */
export const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * The protocol the client used: HTTPS when TLS ends here; behind a trusted proxy (TRUST_PROXY, the TCP
 * peer), the last value of X-Forwarded-Proto, the one that proxy wrote (it sets the header, or appends
 * to what came in). Express's `req.protocol` takes the first value instead, which whoever sent the request
 * to the proxy chose: `X-Forwarded-Proto: https, http` would pass for HTTPS. From a peer that is not a
 * trusted proxy the header means nothing.
 */
export function requestProtocol(req: Request): 'http' | 'https' {
  if ((req.socket as TLSSocket).encrypted) return 'https';
  const trusted = req.app.get('trust proxy fn') as (address: string | undefined, hop: number) => boolean;
  if (!trusted(req.socket.remoteAddress, 0)) return 'http';
  const header = req.headers['x-forwarded-proto'];
  const values = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
  return values[values.length - 1]?.trim().toLowerCase() === 'https' ? 'https' : 'http';
}

/**
 * HTTPS in production. With TLS terminated here, every request is HTTPS already; behind a proxy the
 * forwarded protocol decides (`requestProtocol`: what the trusted proxy wrote), and a request
 * that reached the proxy over plain HTTP is refused with 403 rather than redirected: API clients follow a
 * redirect only after their credential has crossed the network in clear, so the refusal is what makes a
 * misconfigured client visible. Answers over HTTPS carry HSTS (RFC 6797 forbids it over plain HTTP).
 * Development serves plain HTTP on loopback and is left alone.
 */
export function transportSecurity(config: Config): RequestHandler {
  if (!config.production) return (_req, _res, next) => next();
  return (req, res, next) => {
    if (requestProtocol(req) === 'https') {
      res.setHeader('Strict-Transport-Security', HSTS);
      return next();
    }
    if (PLAIN_HTTP_PATHS.has(req.path)) return next();
    sendError(res, 403, 'HTTPS is required: send this request to an https:// URL');
  };
}
