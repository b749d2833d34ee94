import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's (or the image's) root: the nearest folder above this file holding a package.json. This
 * file runs from src/infra (tests) or dist/src/infra (built), and both find the same root, where the
 * schema/ files and the dist/ builds of the dashboard and the API reference are.
 */
function findProjectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir)
      throw new Error(`package.json not found above ${path.dirname(fileURLToPath(import.meta.url))}`);
    dir = parent;
  }
  return dir;
}

export const PROJECT_ROOT = findProjectRoot();
