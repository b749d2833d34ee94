import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { createProgram } from '../../src/cli.js';
import { createScratchDatabase, dropDatabase, withServerClient } from '../../src/infra/database-admin.js';
import { BIN, runCli } from '../helpers/process.js';

/**
 * Asking for help does nothing else. Every command and subcommand is run with `--help` (and `-h`, and as
 * `tollgate help …`) against a real, empty database, with a guard loaded into the process that fails it
 * on any server code being resolved, any port being opened and any connection being made. Afterwards the
 * database's catalog is as it was and the data directory was never created.
 */

/** Every command path of the CLI, from the program itself: a command added later is covered too. */
function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands
    .filter((sub) => sub.name() !== 'help')
    .flatMap((sub) => [[...prefix, sub.name()], ...commandPaths(sub, [...prefix, sub.name()])]);
}

const paths = commandPaths(createProgram());

/** What an empty database holds outside PostgreSQL's own schemas: relations, schemas, functions. */
async function catalog(url: string): Promise<unknown[]> {
  return withServerClient(url, async (client) => {
    const { rows } = await client.query(`
      SELECT 'relation' AS kind, n.nspname || '.' || c.relname AS name FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
      UNION ALL SELECT 'schema', nspname FROM pg_namespace
      UNION ALL SELECT 'function', n.nspname || '.' || p.proname FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
      ORDER BY 1, 2`);
    return rows;
  });
}

async function databaseExists(name: string): Promise<boolean> {
  return withServerClient(process.env.TEST_SERVER_DATABASE_URL!, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return rowCount === 1;
  });
}

describe('--help', () => {
  const name = `tollgate_help_${randomBytes(6).toString('hex')}`;
  let url: string;
  let dir: string;
  let guard: string;
  let before: unknown[];
  beforeAll(async () => {
    url = await createScratchDatabase(process.env.TEST_SERVER_DATABASE_URL!, name);
    before = await catalog(url);
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-help-'));
    guard = path.join(dir, 'guard.mjs');
    // Fails the process (exit 97-99, a line on stderr) on anything beyond printing: resolving the command
    // implementations or a server library, listening on a port, opening a connection.
    await writeFile(
      guard,
      `import { registerHooks } from 'node:module';
import net from 'node:net';
const SERVER_CODE = /(^|\\/)(cli-commands|server|db|app|services|config)\\.js$|^(pg|express|graphql|stripe|pg-boss|ioredis|zod|@mikro-orm\\/.*)$/;
registerHooks({
  resolve(specifier, context, next) {
    if (SERVER_CODE.test(specifier)) {
      process.stderr.write('server code was loaded: ' + specifier + '\\n');
      process.exit(97);
    }
    return next(specifier, context);
  },
});
net.Server.prototype.listen = function () {
  process.stderr.write('a port was opened\\n');
  process.exit(98);
};
net.Socket.prototype.connect = function () {
  process.stderr.write('a connection was opened\\n');
  process.exit(99);
};
`,
    );
  });
  afterAll(async () => {
    await dropDatabase(process.env.TEST_SERVER_DATABASE_URL!, name);
    await rm(dir, { recursive: true, force: true });
  });

  const dataDir = () => path.join(dir, 'data');
  const run = (args: string[], databaseUrl = url) =>
    runCli(
      args,
      {
        DATABASE_URL: databaseUrl,
        DATA_DIR: dataDir(),
        PORT: '0',
        STRIPE_EMULATOR_PORT: '0',
        LOG_LEVEL: 'info',
        NODE_OPTIONS: `--import=${guard}`,
      },
      { entry: BIN },
    );

  it('covers every command', () => {
    expect(paths.map((p) => p.join(' '))).toEqual([
      'serve',
      'migrate',
      'db',
      'db create',
      'apps',
      'apps create',
      'keys',
      'keys create',
      'plans',
      'plans upsert',
      'sync',
      'analytics',
      'analytics verify',
      'analytics backfill',
      'operators',
      'operators add',
      'operators list',
      'operators remove',
      'stripe-emulator',
    ]);
  });

  it.each([[['--help']], [['-h']], [['help']]])('tollgate %j prints the usage and exits 0', async (args) => {
    const result = await run(args);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: tollgate <command> \[options\]\n/);
    for (const [command] of paths) expect(result.stdout).toContain(`\n  ${command} `);
  });

  it.each(paths.flatMap((p) => [[[...p, '--help']], [[...p, '-h']], [['help', ...p]]]))(
    'tollgate %j prints its own help and does nothing else',
    async (args) => {
      const command = args.filter((a) => a !== 'help' && !a.startsWith('-'));
      const result = await run(args);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: tollgate ${command.join(' ')} `));
      // A command that runs something (not a group of subcommands) shows how, with an example.
      const leaf = !paths.some((p) => p.length > command.length && p.join(' ').startsWith(command.join(' ')));
      if (leaf) expect(result.stdout).toMatch(/\nExamples?:\n {2}\$ ([A-Z_]+=\S+ )*tollgate /);
    },
  );

  it('changed no table of the database, and created no data directory', async () => {
    expect(await catalog(url)).toEqual(before);
    expect(existsSync(dataDir())).toBe(false);
  });

  it('`db create --help` creates no database', async () => {
    const missing = `tollgate_help_missing_${randomBytes(6).toString('hex')}`;
    const missingUrl = new URL(url);
    missingUrl.pathname = `/${missing}`;
    const result = await run(['db', 'create', '--help'], missingUrl.toString());
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: tollgate db create /);
    expect(await databaseExists(missing)).toBe(false);
  });

  it('the guard stops a command that does run (so the help runs above would have failed)', async () => {
    const result = await run(['migrate']);
    expect(result.stderr).toBe('server code was loaded: ./cli-commands.js\n');
    expect(result.code).toBe(97);
    expect(await catalog(url)).toEqual(before);
  });
});
