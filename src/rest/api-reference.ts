import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { type Request, type Response, Router } from 'express';
import { PROJECT_ROOT } from '../infra/project-root.js';
import { OPENAPI_PATH } from './service-index.js';

/**
 * The REST API's interactive reference at `GET /docs`: Redoc renders `/openapi.yaml` in the browser.
 * Redoc's standalone build is vendored into dist/api-reference by `bin/build-api-reference.js` (no CDN),
 * and the page's CSP allows nothing from another host, so the reference works offline and tells no third
 * party who reads it. Mounted before the credential and rate-limit middleware: static files, no data.
 */

export const API_REFERENCE_PATH = '/docs';

/**
 * Only this origin. Redoc styles itself at run time (styled-components writes <style> elements), draws
 * icons from data: URLs and runs its search index in a Web Worker it makes from a blob: URL; none of
 * those reaches another host.
 */
export const API_REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': API_REFERENCE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Starts Redoc on the served document; response samples open on the success answers. */
const START_SCRIPT = `Redoc.init(${JSON.stringify(OPENAPI_PATH)}, {
  expandResponses: '200,201',
  hideHostname: true,
  jsonSampleExpandLevel: 3,
  sortPropsAlphabetically: false,
}, document.getElementById('redoc'));
`;

interface Asset {
  readonly body: Buffer;
  readonly gzip: Buffer;
}

interface Build {
  /** Part of the assets' paths, so a new build is never mixed with an old one held in a cache. */
  readonly version: string;
  readonly assets: ReadonlyMap<string, Asset>;
  readonly page: string;
}

export const API_REFERENCE_BUILD_DIR = path.join(PROJECT_ROOT, 'dist', 'api-reference');

/**
 * Redoc's build (and its gzip form, made at build time) and the start script, read into memory;
 * undefined when there is no build.
 */
export function loadApiReferenceBuild(dir = API_REFERENCE_BUILD_DIR): Build | undefined {
  const redocFile = path.join(dir, 'redoc.standalone.js');
  if (!existsSync(redocFile) || !existsSync(`${redocFile}.gz`)) return undefined;
  const redoc = readFileSync(redocFile);
  const start = Buffer.from(START_SCRIPT);
  const version = createHash('sha256').update(redoc).update(start).digest('hex').slice(0, 16);
  const base = `${API_REFERENCE_PATH}/assets/${version}`;
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Tollgate API reference</title>
</head>
<body>
<div id="redoc"><p role="status">Loading the API reference…</p></div>
<noscript><p>The API reference needs JavaScript; the document itself is <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</p></noscript>
<script src="${base}/redoc.js"></script>
<script src="${base}/start.js"></script>
</body>
</html>
`;
  return {
    version,
    assets: new Map([
      ['redoc.js', { body: redoc, gzip: readFileSync(`${redocFile}.gz`) }],
      ['start.js', { body: start, gzip: gzipSync(start) }],
    ]),
    page,
  };
}

function setSecurityHeaders(res: Response): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}

/**
 * `GET /docs` (the page) and `GET /docs/assets/<version>/<file>` (Redoc and its start script). The
 * files are read at the first request, not at start: most starts never serve them.
 */
export function apiReferenceRouter(load: () => Build | undefined = loadApiReferenceBuild): Router {
  let loaded: { build: Build | undefined } | undefined;
  const current = () => {
    loaded ??= { build: load() };
    return loaded.build;
  };
  const router = Router();
  router.get(API_REFERENCE_PATH, (_req: Request, res: Response) => {
    const build = current();
    setSecurityHeaders(res);
    res.setHeader('Cache-Control', 'no-store');
    if (!build) {
      res.status(503).type('text').send('The API reference is not built: run `npm run build`.\n');
      return;
    }
    res.type('html').send(build.page);
  });
  router.get(`${API_REFERENCE_PATH}/assets/:version/:file`, (req: Request, res: Response, next) => {
    const build = current();
    const found =
      build && req.params.version === build.version ? build.assets.get(String(req.params.file)) : undefined;
    if (!found) return next();
    setSecurityHeaders(res);
    // The version in the path changes with either file, so a cached copy can never be stale.
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('Vary', 'Accept-Encoding');
    res.type('text/javascript; charset=utf-8');
    if (req.acceptsEncodings('gzip') === 'gzip') {
      res.setHeader('Content-Encoding', 'gzip');
      res.send(found.gzip);
    } else {
      res.send(found.body);
    }
  });
  return router;
}
