// Builds the API reference's browser files into dist/api-reference/: Redoc's standalone build (React and
// its other libraries inside one script) copied from node_modules with its licence notices
// (src/rest/api-reference.ts serves it, with the page and the script that starts it). No CDN at run time and nothing from another host: the
// production image ships these files and not the redoc package.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

export const API_REFERENCE_OUTPUT = path.join('dist', 'api-reference');

/**
 * The one request Redoc's build makes to another host: the Redocly logo beside "API docs by Redocly" at
 * the foot of the menu, an <img> from cdn.redoc.ly. It becomes an empty inline image (the page's CSP
 * allows data: images), so the page loads nothing from elsewhere. A Redoc release that changes the
 * string fails the build here rather than quietly calling out.
 */
const OUTSIDE_LOGO = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';
const EMPTY_IMAGE = `"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"`;

function localOnly(source) {
  const count = source.split(OUTSIDE_LOGO).length - 1;
  if (count !== 1)
    throw new Error(`redoc.standalone.js: expected the Redocly logo URL once, found it ${count} times`);
  return source.replace(OUTSIDE_LOGO, EMPTY_IMAGE);
}

export function buildApiReference(root) {
  const out = path.join(root, API_REFERENCE_OUTPUT);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const bundles = path.join(root, 'node_modules', 'redoc', 'bundles');
  const redoc = Buffer.from(localOnly(readFileSync(path.join(bundles, 'redoc.standalone.js'), 'utf8')));
  writeFileSync(path.join(out, 'redoc.standalone.js'), redoc);
  // Compressed here, once: gzip of 1.1 MB takes a CPU-bound 0.15 to 0.25 s that no start should pay.
  writeFileSync(path.join(out, 'redoc.standalone.js.gz'), gzipSync(redoc, { level: 9 }));
  copyFileSync(
    path.join(bundles, 'redoc.standalone.js.LICENSE.txt'),
    path.join(out, 'redoc.standalone.js.LICENSE.txt'),
  );
}
