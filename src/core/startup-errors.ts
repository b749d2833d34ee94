/**
 * A start-up failure with one known fix in the environment (a port taken, a database out of reach). Its
 * message names the setting to change, so the process reports it as one line and exits non-zero: a stack
 * trace would only hide the fix.
 */
export class StartupError extends Error {}

/**
 * A failed `listen` on a port the operator chose: taken or not permitted → a StartupError naming the
 * port and the variable that sets it; anything else is a bug and stays as it is.
 */
export function listenFailure(
  error: unknown,
  where: { port: number; host: string; variable: string },
): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const address = `${where.host.includes(':') ? `[${where.host}]` : where.host}:${where.port}`;
  if (code === 'EADDRINUSE') {
    return new StartupError(
      `port ${where.port} is already in use (${address}): set ${where.variable} to a free port, or stop what listens there`,
    );
  }
  if (code === 'EACCES') {
    return new StartupError(
      `port ${where.port} may not be opened by this user (${address}): set ${where.variable} to a port above 1023`,
    );
  }
  if (code === 'EADDRNOTAVAIL') {
    return new StartupError(`${where.host} is not an address of this machine: set HOST to one that is`);
  }
  return error;
}

/** Codes of a PostgreSQL server that answered but would not let us in (SQLSTATE classes 08, 28, 3D, 57P03). */
const REFUSING_SQLSTATE = /^(08|28|3D|57P03)/;
/** pg's own words when the connection cannot be opened in time or is dropped while opening. */
const CONNECT_FAILURE = /timeout|terminated|ended unexpectedly/i;

/**
 * A failure to open the database: unreachable host, refused or timed-out connection, a server that
 * refuses the login or lacks the database → a StartupError naming the host and port (never the
 * credentials) and what went wrong. `source` says where the URL came from (e.g. `DATABASE_URL`).
 * Anything else (a failing migration, a bug) stays as it is.
 */
export function databaseFailure(error: unknown, url: string, source: string): unknown {
  if (!(error instanceof Error)) return error;
  const raw = (error as { code?: unknown }).code;
  const code = typeof raw === 'string' ? raw : '';
  const systemError = /^E[A-Z_]+$/.test(code);
  if (!systemError && !REFUSING_SQLSTATE.test(code) && !CONNECT_FAILURE.test(error.message)) return error;
  if (code === MISSING_DATABASE) {
    // Never created implicitly: a misspelt name must not become an empty production database.
    return new StartupError(
      `database "${databaseOf(url)}" does not exist on ${serverOf(url)} (${source}): correct ${source}, or create it with \`tollgate db create\``,
    );
  }
  return new StartupError(
    `cannot connect to PostgreSQL at ${serverOf(url)} (${source}): ${withoutPassword(reason(error), url)}`,
  );
}

/** SQLSTATE 3D000, invalid_catalog_name: the server is there, the database is not. */
const MISSING_DATABASE = '3D000';

/** The database a PostgreSQL URL names (libpq's default: the user's name). */
function databaseOf(url: string): string {
  try {
    const parsed = new URL(url);
    return decodeURIComponent(parsed.pathname.replace(/^\//, '')) || decodeURIComponent(parsed.username);
  } catch {
    return '';
  }
}

/** `host:port` of a PostgreSQL URL, defaults filled in; the user and password are never part of it. */
export function serverOf(url: string): string {
  try {
    const parsed = new URL(url);
    // A socket directory given as `?host=/run/postgresql` wins over the URL's host, as in libpq.
    const host = parsed.searchParams.get('host') ?? (decodeURIComponent(parsed.hostname) || 'localhost');
    return `${host}:${parsed.searchParams.get('port') ?? (parsed.port || '5432')}`;
  } catch {
    return 'an unparsable URL';
  }
}

/** The URL's password never reaches a log, even if a driver's message were to quote it. */
function withoutPassword(text: string, url: string): string {
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // An unparsable URL has no password to hide.
  }
  return password ? text.split(password).join('[redacted]') : text;
}

/** One line: Node's connect errors to several addresses (localhost → ::1 and 127.0.0.1) come as an AggregateError with no message. */
function reason(error: Error): string {
  const parts =
    error instanceof AggregateError && error.errors.length > 0
      ? error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e)))
      : [error.message || String((error as { code?: unknown }).code ?? 'unknown error')];
  return [...new Set(parts)].join('; ').replace(/\s*\n\s*/g, ' ');
}
