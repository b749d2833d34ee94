import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger };

/** Query parameters whose values are secrets and never reach a log line. */
const SECRET_QUERY_PARAMS = ['token', 'api_key', 'apiKey', 'session_token'];

/** Replaces secret query values in a URL path (`/verify?token=abc` → `/verify?token=[redacted]`). */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of SECRET_QUERY_PARAMS) if (params.has(name)) params.set(name, '[redacted]');
  return `${url.slice(0, q)}?${params.toString()}`;
}

/** `destination` defaults to stdout; tests pass a stream to read what would have been logged. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'tollgate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'req.headers["stripe-signature"]',
          'res.headers["set-cookie"]',
          '*.token',
          '*.sessionToken',
          '*.apiKey',
          '*.secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
