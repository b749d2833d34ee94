#!/usr/bin/env node
// Compiles the TypeScript to dist/ and records when, so `bin/tollgate.js` can tell a fresh build from a
// stale one without compiling (a compile takes seconds; the check takes milliseconds).
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDashboard } from './build-dashboard.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** What the CLI's compiled code is made from. Directories count too: deleting a file changes only its directory. */
const INPUTS = ['src', 'migrations', 'scripts', 'tsconfig.json', 'package.json', 'bin/build-dashboard.js'];

/** Its mtime is the moment the last build started: an edit during a build leaves the build stale. */
export const STAMP = path.join('dist', '.build-stamp');

function newestMtime(file) {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(file)) newest = Math.max(newest, newestMtime(path.join(file, entry)));
  return newest;
}

/** Why dist/ must be rebuilt before it runs, or undefined when it is up to date. */
export function staleReason(root = ROOT) {
  const stamp = statSync(path.join(root, STAMP), { throwIfNoEntry: false });
  if (!stamp) return 'dist/ has not been built here yet';
  const changed = INPUTS.find((input) => newestMtime(path.join(root, input)) > stamp.mtimeMs);
  return changed ? `${changed} changed since the last build` : undefined;
}

/** Whether this checkout can compile at all: production installs ship dist/ without the compiler or sources. */
export function canBuild(root = ROOT) {
  return existsSync(path.join(root, 'src')) && existsSync(path.join(root, 'node_modules/typescript/bin/tsc'));
}

/**
 * Compiles (no type check: `npm run typecheck` does that), its output on stderr, builds the dashboard's
 * browser files (bin/build-dashboard.js), then writes the stamp.
 */
export async function build(root = ROOT) {
  const started = new Date();
  const result = spawnSync(
    process.execPath,
    [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.json'), '--noCheck'],
    { cwd: root, stdio: ['ignore', 2, 2] },
  );
  if (result.status !== 0) return false;
  try {
    await buildDashboard(root);
  } catch (error) {
    process.stderr.write(`dashboard: ${error.message}\n`);
    return false;
  }
  const stamp = path.join(root, STAMP);
  closeSync(openSync(stamp, 'w'));
  utimesSync(stamp, started, started);
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = (await build()) ? 0 : 1;
}
