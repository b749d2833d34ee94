import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimitedError } from '../../core/errors.js';
import { FIELD_LIMITS } from './field-limits.js';
import type { RateLimitsService } from './rate-limits.service.js';

/**
 * A REST route that does what a budgeted GraphQL field does spends the same budget: counted under the
 * field's name and the request's rate-limit subject, so switching transports buys no extra attempts.
 */
export function operationBudget(
  rateLimits: RateLimitsService,
  field: keyof typeof FIELD_LIMITS & string,
): RequestHandler {
  const limit = FIELD_LIMITS[field];
  if (!limit) throw new Error(`no budget named ${field}`);
  const windowSeconds = durationSeconds(limit.window);
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const args = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
      await rateLimits.consumeField(
        { args, info: { fieldName: field }, rateLimitSubject: req.rateLimitSubject ?? 'unknown' },
        limit,
      );
      next();
    } catch (error) {
      // The budget keeps call times, not a window end: a whole window is the longest wait that surely helps.
      next(error instanceof RateLimitedError ? new RateLimitedError(error.message, windowSeconds) : error);
    }
  };
}

/** `'30s'`, `'1m'`, `'1h'` in seconds (the forms FIELD_LIMITS uses). */
function durationSeconds(window: string): number {
  const match = /^(\d+)\s*(s|m|h)$/.exec(window);
  if (!match) throw new Error(`unsupported budget window ${window}`);
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2] as 's' | 'm' | 'h'];
}
