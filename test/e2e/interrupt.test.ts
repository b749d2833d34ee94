import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { eventually } from '../helpers/eventually.js';
import { CLI } from '../helpers/process.js';

/**
 * Ctrl-C at a terminal: the terminal sends SIGINT to the whole foreground process group. A development
 * start (embedded PostgreSQL) stops cleanly: it logs that it is shutting down and that it stopped, at
 * info level, nothing at error level, and PostgreSQL is stopped by Tollgate after its own shutdown
 * rather than by the same signal under Tollgate's open connections.
 */

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('Ctrl-C on a development start', () => {
  // Under the checkout, as the default DATA_DIR is: run as root, PostgreSQL's own user must reach it.
  const dataDir = path.resolve('.data', `interrupt-${process.pid}`);
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('logs one shutdown at info level, no error, and stops its PostgreSQL itself', async () => {
    const { DATABASE_URL: _unset, ...parentEnv } = process.env;
    // Its own process group, as a terminal's foreground job is; the test signals the group.
    const child = spawn(process.execPath, [CLI, 'serve'], {
      detached: true,
      env: {
        PATH: parentEnv.PATH,
        DATA_DIR: dataDir,
        PORT: '0',
        STRIPE_EMULATOR_PORT: '0',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      },
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    let postgresPid: number | undefined;
    try {
      await eventually(
        () => {
          if (child.exitCode !== null) throw new Error(`serve exited: ${output}`);
          return output.includes('Tollgate is running') ? true : undefined;
        },
        { what: 'the development start (initialising embedded PostgreSQL)', timeoutMs: 120_000 },
      );
      const lockFile = path.join(dataDir, 'postgres', 'postmaster.pid');
      postgresPid = Number((await readFile(lockFile, 'utf8')).split('\n')[0]);
      expect(isAlive(postgresPid)).toBe(true);

      process.kill(-child.pid!, 'SIGINT');
      expect(await exited).toBe(0);

      const logLines = output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; signal?: string });
      expect(logLines.filter((line) => line.level >= 50)).toEqual([]);
      const shutdown = logLines.filter((line) => /shutting down|stopped/.test(line.msg));
      expect(shutdown.map(({ level, msg, signal }) => ({ level, msg, signal }))).toEqual([
        { level: 30, msg: 'shutting down: finishing in-flight requests', signal: 'SIGINT' },
        { level: 30, msg: 'stopped', signal: undefined },
      ]);
      expect(output).not.toContain('administrator command');
      // Tollgate waited for PostgreSQL to stop before it exited.
      expect(isAlive(postgresPid)).toBe(false);
      expect(existsSync(lockFile)).toBe(false);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
      // PostgreSQL has a process group of its own: a failed run must not leave it behind.
      if (postgresPid && isAlive(postgresPid)) process.kill(postgresPid, 'SIGINT');
    }
  }, 180_000);
});
