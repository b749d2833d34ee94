import { getDomain } from 'tldts';

/**
 * Allowed callback URL patterns: a pure module with no I/O.
 *
 * A pattern is `scheme://host[:port][/path-and-query]`, compared part by part with a parsed URL:
 * - scheme: exactly (`http` or `https`);
 * - host: case-insensitive; `*` matches one or more hostname characters, dots included, never
 *   `/ @ : \ ? #`; a wildcard must leave a registrable domain after it (`*.example.com`, not `*.com`,
 *   `*.co.uk` or `*`);
 * - port: `*` matches any port; absent means the scheme's default port;
 * - path and query: `*` matches anything; absent means `/`.
 * A URL with user info (`user@host`) never matches. `http://localhost[:port]/…` is always allowed.
 */
export interface CallbackPattern {
  readonly source: string;
  readonly scheme: 'http' | 'https';
  readonly host: RegExp;
  /** '*' for any port, '' for the scheme's default, else the port number as a string. */
  readonly port: string;
  readonly pathAndQuery: RegExp;
}

export class InvalidPatternError extends Error {}

const PATTERN_SHAPE = /^(https?):\/\/([^/?#]+?)(?::(\*|\d{1,5}))?((?:[/?])[^#]*)?$/i;
const HOST_PATTERN = /^[a-z0-9*](?:[a-z0-9.*-]*[a-z0-9*])?$/;
const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function glob(text: string, star: string): RegExp {
  return new RegExp(`^${text.split('*').map(escapeRegExp).join(star)}$`);
}

/** Parses one pattern line, or throws InvalidPatternError saying what is wrong with it. */
export function parseCallbackPattern(line: string): CallbackPattern {
  const source = line.trim();
  if (/[\s\\]/.test(source))
    throw new InvalidPatternError(`"${source}": whitespace and backslashes are not allowed`);
  const shape = PATTERN_SHAPE.exec(source);
  if (!shape) {
    throw new InvalidPatternError(
      `"${source}": must look like https://host/path (scheme http or https, no fragment)`,
    );
  }
  const [, schemeRaw, hostRaw, portRaw, pathRaw] = shape;
  const scheme = schemeRaw!.toLowerCase() as 'http' | 'https';
  const host = hostRaw!.toLowerCase();
  if (host.includes('@')) throw new InvalidPatternError(`"${source}": user info is not allowed`);
  if (!HOST_PATTERN.test(host) || host.includes('..')) {
    throw new InvalidPatternError(`"${source}": invalid host "${hostRaw}"`);
  }
  if (host.includes('*')) {
    const fixedSuffix = host.slice(host.lastIndexOf('*') + 1);
    const domain = fixedSuffix.startsWith('.') ? fixedSuffix.slice(1) : '';
    if (!domain || getDomain(domain, { allowPrivateDomains: true }) === null) {
      throw new InvalidPatternError(
        `"${source}": a host wildcard must be followed by a registrable domain (e.g. *.example.com), not a public suffix`,
      );
    }
  }
  let port = portRaw ?? '';
  if (port !== '' && port !== '*') {
    const n = Number(port);
    if (n < 1 || n > 65535) throw new InvalidPatternError(`"${source}": invalid port ${port}`);
    port = String(n) === DEFAULT_PORTS[scheme] ? '' : String(n);
  }
  return {
    source,
    scheme,
    host: glob(host, '[^/@:\\\\?#\\s]+'),
    port,
    pathAndQuery: glob(pathRaw ?? '/', '.*'),
  };
}

/** Parses an app's pattern text (one pattern per line, blank lines ignored). */
export function parseCallbackPatterns(text: string): CallbackPattern[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .map(parseCallbackPattern);
}

/**
 * The patterns of a stored setting, for matching. Settings are validated when saved; a line that a
 * later, stricter rule no longer accepts is skipped, so it allows nothing rather than failing logins.
 */
export function parseStoredCallbackPatterns(text: string): CallbackPattern[] {
  return text.split(/\r?\n/).flatMap((line) => {
    if (line.trim() === '') return [];
    try {
      return [parseCallbackPattern(line)];
    } catch (error) {
      if (error instanceof InvalidPatternError) return [];
      throw error;
    }
  });
}

/** Backslashes, whitespace and control characters are normalised away by URL parsers in ways browsers differ on. */
function hasAmbiguousCharacters(text: string): boolean {
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code <= 0x20 || code === 0x7f || ch === '\\') return true;
  }
  return /\s/u.test(text);
}

/** Parses a candidate redirect URL strictly; undefined when it is not a plain absolute http(s) URL. */
function parseCandidate(candidate: string): URL | undefined {
  if (hasAmbiguousCharacters(candidate)) return undefined;
  if (!/^https?:\/\//i.test(candidate)) return undefined;
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '') return undefined;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return url;
}

/** Whether `candidate` may be used as a redirect target given the app's patterns. */
export function isAllowedCallbackUrl(candidate: string, patterns: readonly CallbackPattern[]): boolean {
  return checkCallbackUrl(candidate, patterns).allowed;
}

export interface CallbackUrlCheck {
  readonly allowed: boolean;
  /** The first pattern that allows the URL; null when none does or when localhost's rule allows it. */
  readonly matchedPattern: string | null;
}

/** Whether `candidate` is allowed, and by which pattern: the matcher the login and checkout flows use. */
export function checkCallbackUrl(candidate: string, patterns: readonly CallbackPattern[]): CallbackUrlCheck {
  const url = parseCandidate(candidate);
  if (!url) return { allowed: false, matchedPattern: null };
  if (url.protocol === 'http:' && url.hostname === 'localhost')
    return { allowed: true, matchedPattern: null };
  const scheme = url.protocol.slice(0, -1);
  const pathAndQuery = url.pathname + url.search;
  const match = patterns.find(
    (p) =>
      p.scheme === scheme &&
      p.host.test(url.hostname) &&
      (p.port === '*' || p.port === url.port) &&
      p.pathAndQuery.test(pathAndQuery),
  );
  return { allowed: match !== undefined, matchedPattern: match?.source ?? null };
}

/**
 * Whether a browser origin (`scheme://host[:port]`, as the `Origin` header sends it) is the origin of
 * one of the patterns: scheme, host and port compared as for a callback URL, the path left aside. A page
 * that may receive the login callback may call Tollgate from the browser.
 */
export function isAllowedOrigin(origin: string, patterns: readonly CallbackPattern[]): boolean {
  const url = parseCandidate(`${origin}/`);
  if (!url || `${url.protocol}//${url.host}` !== origin.toLowerCase()) return false;
  const scheme = url.protocol.slice(0, -1);
  return patterns.some(
    (p) => p.scheme === scheme && p.host.test(url.hostname) && (p.port === '*' || p.port === url.port),
  );
}

/** `http://localhost[:port]`, the origin of a local development server. */
export function isLocalhostOrigin(origin: string): boolean {
  return /^http:\/\/localhost(?::\d{1,5})?$/.test(origin);
}
