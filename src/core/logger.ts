import { createRequire } from 'node:module';
import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger };

/**
 * `json` for log collectors (production, or output piped to a file or another program); `pretty` for a
 * person reading a terminal. LOG_FORMAT chooses; unset, development at a terminal is pretty.
 */
export type LogFormat = 'json' | 'pretty';

export function chooseLogFormat(options: {
  readonly requested: LogFormat | undefined;
  readonly production: boolean;
  readonly terminal: boolean;
}): LogFormat {
  if (options.requested) return options.requested;
  return !options.production && options.terminal ? 'pretty' : 'json';
}

type Prettify = (line: string) => string;
type PrettyFactory = (options: Record<string, unknown>) => Prettify;

/**
 * pino-pretty is a development dependency (production logs are JSON), so it is loaded only when asked
 * for, and its absence (an `npm ci --omit=dev` install) leaves the logs JSON instead of failing the start.
 * Its formatter is used directly rather than its stream, which is asynchronous: lines written just
 * before `process.exit` (a failed start, a shutdown) would be lost.
 */
function loadPretty(): PrettyFactory | undefined {
  try {
    return (createRequire(import.meta.url)('pino-pretty') as { prettyFactory: PrettyFactory }).prettyFactory;
  } catch {
    return undefined;
  }
}

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

/**
 * `destination` defaults to stdout; tests pass a stream to read what would have been logged. Pretty
 * output is the same records (redaction included) laid out for reading.
 */
export function createLogger(
  level: string,
  destination?: DestinationStream,
  format: LogFormat = 'json',
): Logger {
  const pretty = format === 'pretty' ? loadPretty() : undefined;
  let output = destination;
  if (pretty) {
    const prettify = pretty({
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service',
      // Colours for a terminal only; a stream handed in (tests, files) gets plain text.
      ...(destination ? { colorize: false } : {}),
    });
    const target = destination ?? pino.destination({ dest: 1, sync: true });
    output = { write: (line: string) => target.write(prettify(line)) };
  }
  const logger = pino(
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
    output,
  );
  if (format === 'pretty' && !pretty) {
    logger.warn(
      'LOG_FORMAT=pretty needs pino-pretty, a development dependency that is not installed: logging JSON',
    );
  }
  return logger;
}
