import { createRequire } from 'node:module';
import querystring from 'node:querystring';
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

/**
 * The process's logger as the configuration asks for it: its level, and pretty lines only where a person
 * reads them (see `chooseLogFormat`). `toStderr` keeps stdout for a command's own output.
 */
export function loggerFor(
  config: {
    readonly logLevel: string;
    readonly logFormat: LogFormat | undefined;
    readonly production: boolean;
  },
  options: { readonly level?: string; readonly toStderr?: boolean } = {},
): Logger {
  const stream = options.toStderr ? process.stderr : process.stdout;
  return createLogger(
    options.level ?? config.logLevel,
    options.toStderr ? pino.destination({ dest: 2, sync: true }) : undefined,
    chooseLogFormat({
      requested: config.logFormat,
      production: config.production,
      terminal: stream.isTTY === true,
    }),
  );
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

/**
 * The query parameters whose values a logged URL shows, by their decoded name exactly as the app reads
 * it: paging and ids, which hold no personal value. Every other parameter's value is redacted, whatever
 * its name (`email`, `token`, `redirect`, a GraphQL GET's `variables`, one nobody reads): an access log
 * line outlives a customer's erasure, so it must never have held the customer's data.
 */
export const LOGGED_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  'limit',
  'offset',
  'starting_after',
  'ending_before',
  'appId',
  'customerId',
  'organizationId',
]);

/** A parameter name that may be logged as sent (its value redacted): a short plain identifier. */
const PLAIN_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}(\[[A-Za-z0-9_]{0,16}\])?$/;

/** Tollgate's own secrets (API keys, session and magic-link tokens, the admin token), wherever they appear. */
const SECRET_VALUE = /tg_[a-z]+_[A-Za-z0-9_-]+/;

/** What replaces a redacted value in a logged URL (percent-encoded, as the rest of the URL is). */
const REDACTED = '%5Bredacted%5D';

function secretValue(text: string): boolean {
  return SECRET_VALUE.test(decode(text));
}

/** Decodes exactly as Express's query parser does (lenient with malformed escapes), so names match what the app reads. */
function decode(text: string): string {
  return querystring.unescape(text.replace(/\+/g, ' '));
}

/**
 * The URL as it may be logged: only the parameters of `LOGGED_QUERY_PARAMETERS` keep their values; every
 * other one gets `[redacted]` as its value, and its name too unless that is a plain identifier (a name
 * may itself carry a value: `?ada@example.com`). A path or allowed value holding one of Tollgate's
 * secrets is replaced too. Names and values are compared decoded, as the app reads them.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const safePath = secretValue(path)
    ? decode(path).replaceAll(new RegExp(SECRET_VALUE, 'g'), REDACTED)
    : path;
  if (q === -1) return safePath;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const name = eq === -1 ? part : part.slice(0, eq);
      const decodedName = decode(name);
      if (eq !== -1 && LOGGED_QUERY_PARAMETERS.has(decodedName) && !secretValue(part.slice(eq + 1)))
        return part;
      if (part === '') return part;
      return PLAIN_NAME.test(decodedName) && !secretValue(name) ? `${name}=${REDACTED}` : REDACTED;
    });
  return `${safePath}?${query.join('&')}`;
}

/** What no log line may show, under any top-level key (`*`) or under the one named. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["stripe-signature"]',
  'res.headers["set-cookie"]',
  '*.token',
  '*.sessionToken',
  '*.apiKey',
  '*.secret',
  '*.password',
  '*.authorization',
  '*.cookie',
  '*["stripe-signature"]',
  // Body-parser and the HTTP parser attach what they read (the raw body, the raw request bytes).
  'err.body',
  'err.rawPacket',
];

/**
 * pino redacts every value of every line (each key of the logged object, the message, each binding of a
 * child logger) by parsing each path again, copying the value along them and walking them, whether or
 * not the value holds any of the names; on a request that made this the largest allocation of the process
 * and about a tenth of a cheap request's CPU. Every path here names a property directly below a
 * top-level key (`req.headers…`, `*.token`), so a value that is a primitive, or a plain object or array
 * with none of those property names (`in`, as the redactor looks them up), comes out of the redactor
 * exactly as pino's own serializer writes it. Such values now go straight to that serializer; every other
 * value (an Error, a class instance, anything with one of the names) still goes through the redactor.
 * Message interpolation (`%o`) keeps its own redactor untouched.
 */
function skipRedactionWhereNothingMatches(logger: Logger, paths: readonly string[]): void {
  const names = new Set<string>();
  for (const path of paths) {
    const segments = path.match(/[^.[\]"']+/g) ?? [];
    // A path of one segment censors a whole top-level value; one with a later `*` matches any name.
    if (segments.length < 2 || segments.slice(1).includes('*')) return;
    names.add(segments[1]);
  }
  const { stringifiersSym, stringifySym, stringifySafeSym, wildcardFirstSym } = pino.symbols;
  const internals = logger as unknown as Record<symbol, unknown>;
  const stringifiers = internals[stringifiersSym] as Record<string | symbol, (value: unknown) => string>;
  const stringify = internals[stringifySym] as (value: unknown, safe: unknown) => string;
  const stringifySafe = internals[stringifySafeSym];
  const holdsNoName = (value: unknown): boolean => {
    if (value === null || typeof value !== 'object') return true;
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null && !Array.isArray(value)) return false;
    for (const name of names) if (name in value) return false;
    return true;
  };
  for (const key of [...Object.keys(stringifiers), wildcardFirstSym]) {
    const redact = stringifiers[key];
    if (typeof redact !== 'function') continue;
    stringifiers[key] = (value: unknown) =>
      holdsNoName(value) ? stringify.call(logger, value, stringifySafe) : redact(value);
  }
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
  // Synchronous, as Node writes stdout to files and pipes on Linux: pino's default hands every line to
  // libuv's thread pool, a wake-up of another thread for each request's log line (15–20 µs of a request's
  // CPU under load), and keeps unwritten lines in memory that a hard crash loses.
  let output = destination ?? pino.destination({ dest: 1, sync: true });
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
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    output,
  );
  skipRedactionWhereNothingMatches(logger, REDACTED_PATHS);
  if (format === 'pretty' && !pretty) {
    logger.warn(
      'LOG_FORMAT=pretty needs pino-pretty, a development dependency that is not installed: logging JSON',
    );
  }
  return logger;
}
