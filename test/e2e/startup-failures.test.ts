import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dropDatabase, withServerClient } from '../../src/infra/database-admin.js';
import { runCli } from '../helpers/process.js';
import { productionEnv } from '../helpers/server.js';

/**
 * The mistakes an operator makes first (a port already taken, a database out of reach) end in one line
 * that names the setting to change, a non-zero exit and no stack trace.
 */

const STACK_LINE = /^\s+at /m;

function occupy(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

const portOf = (server: Server) => (server.address() as { port: number }).port;

/** A loopback port nothing listens on: taken from the system, then given back. */
async function closedPort(): Promise<number> {
  const server = await occupy();
  const port = portOf(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('start-up failures name their fix', () => {
  let occupied: Server;
  let port: number;
  let dataDir: string;
  beforeAll(async () => {
    occupied = await occupy();
    port = portOf(occupied);
    dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-startup-'));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => occupied.close(() => resolve()));
    await rm(dataDir, { recursive: true, force: true });
  });

  const serveEnv = (overrides: Record<string, string>) => ({
    DATABASE_URL: process.env.TEST_DATABASE_URL,
    DATA_DIR: dataDir,
    ADMIN_TOKEN: 'startup-test-admin-token-0123456789',
    LOG_LEVEL: 'warn',
    PORT: '0',
    STRIPE_EMULATOR_PORT: '0',
    ...overrides,
  });

  it('the API port in use: one line naming the port and PORT', async () => {
    const result = await runCli(['serve'], serveEnv({ PORT: String(port) }));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `tollgate: port ${port} is already in use (127.0.0.1:${port}): set PORT to a free port, or stop what listens there\n`,
    );
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it("the emulator's port in use: one line naming the port and STRIPE_EMULATOR_PORT", async () => {
    const result = await runCli(['serve'], serveEnv({ STRIPE_EMULATOR_PORT: String(port) }));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `tollgate: port ${port} is already in use (127.0.0.1:${port}): set STRIPE_EMULATOR_PORT to a free port, or stop what listens there\n`,
    );
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it('the stand-alone emulator names STRIPE_EMULATOR_PORT, or --port when that chose the port', async () => {
    const fromEnv = await runCli(['stripe-emulator'], {
      STRIPE_EMULATOR_PORT: String(port),
      LOG_LEVEL: 'warn',
    });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toBe(
      `tollgate: port ${port} is already in use (127.0.0.1:${port}): set STRIPE_EMULATOR_PORT to a free port, or stop what listens there\n`,
    );
    const fromFlag = await runCli(['stripe-emulator', '--port', String(port)], { LOG_LEVEL: 'warn' });
    expect(fromFlag.code).toBe(1);
    expect(fromFlag.stderr).toBe(
      `tollgate: port ${port} is already in use (127.0.0.1:${port}): set --port to a free port, or stop what listens there\n`,
    );
  });

  it.each([['serve'], ['migrate'], ['apps', 'create', '--name', 'x']])(
    'a refused database (%s): one line with its host and port, never the password',
    async (...args) => {
      const dbPort = await closedPort();
      const url = `postgres://tollgate:hunter2-very-secret@127.0.0.1:${dbPort}/tollgate`;
      const result = await runCli(args, serveEnv({ DATABASE_URL: url }));
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `tollgate: cannot connect to PostgreSQL at 127.0.0.1:${dbPort} (DATABASE_URL): connect ECONNREFUSED 127.0.0.1:${dbPort}\n`,
      );
      expect(result.stderr + result.stdout).not.toContain('hunter2');
      expect(result.stderr).not.toMatch(STACK_LINE);
    },
  );

  it('a database host that does not resolve: one line with its host and port', async () => {
    const url = 'postgres://tollgate:hunter2-very-secret@db.invalid:6543/tollgate';
    const result = await runCli(['migrate'], serveEnv({ DATABASE_URL: url }));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^tollgate: cannot connect to PostgreSQL at db\.invalid:6543 \(DATABASE_URL\): getaddrinfo E[A-Z_]+ db\.invalid\n$/,
    );
    expect(result.stderr).not.toContain('hunter2');
  });
});

/**
 * A production start never creates its database: a misspelt DATABASE_URL must stop the start with the
 * name to check, not give the service an empty database. `tollgate db create` is the explicit way.
 */
describe('a production start on a database that does not exist', () => {
  const serverUrl = () => process.env.TEST_SERVER_DATABASE_URL!;
  const name = `tollgate_missing_${randomBytes(6).toString('hex')}`;
  const url = () => {
    const missing = new URL(serverUrl());
    missing.pathname = `/${name}`;
    return missing.toString();
  };
  const server = () => {
    const { hostname, port } = new URL(serverUrl());
    return `${hostname}:${port || '5432'}`;
  };
  const exists = () =>
    withServerClient(serverUrl(), async (client) => {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      return rowCount === 1;
    });
  const refusal = () =>
    `tollgate: database "${name}" does not exist on ${server()} (DATABASE_URL): correct DATABASE_URL, or create it with \`tollgate db create\`\n`;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-missing-db-'));
  });
  afterAll(async () => {
    await dropDatabase(serverUrl(), name);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('migrate (given only DATABASE_URL) exits 1 naming the database, and does not create it', async () => {
    const result = await runCli(['migrate'], { NODE_ENV: 'production', DATABASE_URL: url() });
    expect(result.stderr).toBe(refusal());
    expect(result.stdout).toBe('');
    expect(result.code).toBe(1);
    expect(await exists()).toBe(false);
  });

  it('serve exits 1 naming the database, and does not create it', async () => {
    const result = await runCli(
      ['serve'],
      productionEnv({
        DATABASE_URL: url(),
        ADMIN_TOKEN: 'missing-db-admin-token-0123456789',
        TRUST_PROXY: '1',
        PORT: '0',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
      }),
    );
    expect(result.stderr).toBe(refusal());
    expect(result.stdout).toBe('');
    expect(result.code).toBe(1);
    expect(await exists()).toBe(false);
  });

  it('`db create` creates it (once), after which migrate, given only DATABASE_URL, applies the migrations', async () => {
    const env = { NODE_ENV: 'production', DATABASE_URL: url() };
    const created = await runCli(['db', 'create'], env);
    expect(created.stderr).toBe('');
    expect(created.stdout).toBe(`database "${name}" created on ${server()}\n`);
    expect(created.code).toBe(0);
    expect(await exists()).toBe(true);

    const again = await runCli(['db', 'create'], env);
    expect(again.stdout).toBe(`database "${name}" already exists on ${server()}\n`);
    expect(again.code).toBe(0);

    const migrated = await runCli(['migrate'], env);
    expect(migrated.stderr).toBe('');
    expect(migrated.stdout).toBe('migrations: up to date\n');
    expect(migrated.code).toBe(0);
    const tables = await withServerClient(url(), async (client) => {
      const { rows } = await client.query("SELECT to_regclass('public.app') IS NOT NULL AS app");
      return rows[0];
    });
    expect(tables).toEqual({ app: true });
  });
});
