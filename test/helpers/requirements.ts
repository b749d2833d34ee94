import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';

/**
 * Tests that need more than Node and PostgreSQL (a browser, a Redis). On a newcomer's machine `npm test`
 * skips them and says why in the suite's name (the summary line lists it); CI sets
 * TOLLGATE_REQUIRE_ALL_TESTS=1 (`.ci/run` does), and there a missing requirement fails the run instead.
 */

export interface Requirement {
  /** Undefined when the requirement is met, else what is missing and how to provide it. */
  readonly missing: string | undefined;
}

export const REQUIRE_ALL_VARIABLE = 'TOLLGATE_REQUIRE_ALL_TESTS';

export type RequirementMode = 'run' | 'skip' | 'fail';

export function requirementMode(
  requirement: Requirement,
  env: NodeJS.ProcessEnv = process.env,
): RequirementMode {
  if (requirement.missing === undefined) return 'run';
  return env[REQUIRE_ALL_VARIABLE] === '1' ? 'fail' : 'skip';
}

/** `describe`, unless the requirement is missing: then skipped with the reason, or failed when all tests are required. */
export function describeRequiring(requirement: Requirement, name: string, fn: () => void): void {
  const mode = requirementMode(requirement);
  if (mode === 'run') {
    describe(name, fn);
  } else if (mode === 'skip') {
    describe.skip(`${name} (skipped: ${requirement.missing})`, fn);
  } else {
    describe(name, () => {
      it(`has what it needs (${REQUIRE_ALL_VARIABLE}=1)`, () => {
        throw new Error(`${REQUIRE_ALL_VARIABLE}=1 and ${requirement.missing}`);
      });
    });
  }
}

/** Debian's chromium (`.ci/run` installs it when missing); CHROMIUM_PATH points elsewhere. */
export function chromiumRequirement(path: string): Requirement {
  return {
    missing: existsSync(path)
      ? undefined
      : `no Chromium at ${path}: install chromium (apt-get install chromium) or set CHROMIUM_PATH`,
  };
}

/** A Redis answering at `url` (a TCP connection within a second is enough to decide). */
export async function redisRequirement(url: string): Promise<Requirement> {
  const { hostname, port } = new URL(url);
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: hostname || '127.0.0.1', port: Number(port || 6379), timeout: 1000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
  return {
    missing: reachable ? undefined : `no Redis at ${url}: start redis-server or set TEST_REDIS_URL`,
  };
}

/** A `redis-server` program on the PATH, for tests that run (and stop) a Redis of their own. */
export function redisServerRequirement(): Requirement {
  const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return {
    missing:
      found.status === 0
        ? undefined
        : 'no redis-server program on the PATH: install redis-server (apt-get install redis-server)',
  };
}
