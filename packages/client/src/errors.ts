/** The rate-limit headers of an answer, as numbers (`reset` is the Unix time in seconds). */
export interface RateLimit {
  readonly limit: number;
  readonly remaining: number;
  readonly reset: number;
}

/**
 * Every failure of the client: Tollgate's error envelope (`statusCode`, `error`, `message`) with the
 * answer's rate-limit headers; `statusCode` 0 when no answer arrived (network failure) or the call was
 * refused before being sent (a misconfiguration).
 */
export class TollgateError extends Error {
  readonly statusCode: number;
  readonly error: string;
  readonly rateLimit: RateLimit | undefined;
  /** Seconds to wait before trying again (429 only). */
  readonly retryAfter: number | undefined;

  constructor(init: {
    statusCode: number;
    error: string;
    message: string;
    rateLimit?: RateLimit;
    retryAfter?: number;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'TollgateError';
    this.statusCode = init.statusCode;
    this.error = init.error;
    this.rateLimit = init.rateLimit;
    this.retryAfter = init.retryAfter;
  }
}

/** A failure found before any request was sent. */
export function configurationError(message: string): TollgateError {
  return new TollgateError({ statusCode: 0, error: 'Configuration Error', message });
}
