#!/usr/bin/env node
// Compiles the TypeScript to dist/ and records when, so `bin/tollgate.js` can tell a fresh build from a
// stale one without compiling (a compile takes seconds; the check takes milliseconds).
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApiReference } from './build-api-reference.js';
import { buildDashboard } from './build-dashboard.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * What the build makes things from: the CLI's code, the dashboard's browser files and the
 * `@tollgate/client` package. Directories count too: deleting a file changes only its directory.
 */
const INPUTS = [
  'src',
  'migrations',
  'scripts',
  'tsconfig.json',
  'package.json',
  'bin/build-dashboard.js',
  'bin/build-api-reference.js',
  'packages/client/src',
  'packages/client/tsconfig.json',
  'packages/client/package.json',
];

/** The client package, built beside the server (ESM + type declarations in its own dist/). */
export const CLIENT_PACKAGE = path.join('packages', 'client');

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
 * Compiles the server (no type check: `npm run typecheck` does that) and the client package (checked:
 * its declarations are what users compile against), output on stderr, builds the dashboard's browser
 * files (bin/build-dashboard.js) and the API reference's (bin/build-api-reference.js), then writes the stamp.
 */
export async function build(root = ROOT) {
  const started = new Date();
  const tsc = (project, ...flags) =>
    spawnSync(
      process.execPath,
      [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', project, ...flags],
      {
        cwd: root,
        stdio: ['ignore', 2, 2],
      },
    ).status === 0;
  if (!tsc(path.join(root, 'tsconfig.json'), '--noCheck')) return false;
  const client = path.join(root, CLIENT_PACKAGE);
  if (existsSync(path.join(client, 'tsconfig.json'))) {
    // A clean output: a source file removed must not leave its old build in the published package.
    rmSync(path.join(client, 'dist'), { recursive: true, force: true });
    if (!tsc(path.join(client, 'tsconfig.json'))) return false;
  }
  try {
    await buildDashboard(root);
  } catch (error) {
    process.stderr.write(`dashboard: ${error.message}\n`);
    return false;
  }
  try {
    buildApiReference(root);
  } catch (error) {
    process.stderr.write(`API reference: ${error.message}\n`);
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
