import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../helpers/process.js';

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
