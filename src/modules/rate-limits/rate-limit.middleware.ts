import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimitedError } from '../../core/errors.js';
import { type RateLimitsService, WINDOW_SECONDS } from './rate-limits.service.js';

declare module 'express-serve-static-core' {
  interface Request {
    /**
     * A credential the credential middleware rejected. It is passed on (→ 401) only after the request
     * has been counted, so a 401 carries the rate-limit headers like every other answer.
     */
    credentialError?: unknown;
    /** The key this request was counted under; GraphQL per-field limits use the same identity. */
    rateLimitSubject?: string;
  }
}

/** Provider notifications are signed by the provider, not sent by clients: they spend no client budget. */
const UNCOUNTED_PATH = /^\/v1\/webhooks\//;

/**
 * Counts every request after its credential is known, sets `X-RateLimit-Limit`, `-Remaining` and
 * `-Reset` (Unix seconds) on the response, and refuses the request over budget (429 + `Retry-After`).
 */
export function rateLimitMiddleware(rateLimits: RateLimitsService): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (UNCOUNTED_PATH.test(req.path)) return next(req.credentialError);
    try {
      const subject = rateLimits.subjectOf(req.principal, req.ip ?? 'unknown', req.path);
      req.rateLimitSubject = subject.key;
      const allowance = await rateLimits.consumeRequest(subject);
      res.setHeader('X-RateLimit-Limit', String(allowance.limit));
      res.setHeader('X-RateLimit-Remaining', String(allowance.remaining));
      res.setHeader('X-RateLimit-Reset', String(allowance.resetAt));
      if (!allowance.allowed) {
        return next(
          new RateLimitedError(
            `Rate limit exceeded: ${allowance.limit} requests per ${WINDOW_SECONDS} seconds`,
            allowance.retryAfterSeconds,
          ),
        );
      }
      next(req.credentialError);
    } catch (error) {
      next(error);
    }
  };
}
