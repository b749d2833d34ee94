import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { type Request, type Response, Router } from 'express';
import { PROJECT_ROOT } from '../infra/project-root.js';

/**
 * The app dashboard at `/dashboard`: one HTML page and its ES modules, built into dist/dashboard by
 * `bin/build-dashboard.js`. The page reads and changes data only through `/graphql`, with the credential
 * the operator types in (kept in the tab's sessionStorage, sent as a bearer header, never in a cookie or
 * a URL). Mounted before the credential and rate-limit middleware: these files are static and read no data.
 */

export const DASHBOARD_PATH = '/dashboard';

/**
 * Only this origin, no inline script or style, no framing, no plugins, forms posted nowhere (the page
 * sends its forms with fetch), and no `<base>` to re-aim relative URLs.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': DASHBOARD_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip: Buffer;
}

interface Build {
  /** Part of every asset's path, so a new build is never mixed with an old one held in a cache. */
  readonly version: string;
  readonly assets: ReadonlyMap<string, Asset>;
  readonly page: string;
}

export const DASHBOARD_BUILD_DIR = path.join(PROJECT_ROOT, 'dist', 'dashboard');

function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    return statSync(full).isDirectory() ? listFiles(full, `${prefix}${entry}/`) : [`${prefix}${entry}`];
  });
}

/** The built files, read once into memory (with their gzip form); undefined when there is no build. */
export function loadDashboardBuild(dir = DASHBOARD_BUILD_DIR): Build | undefined {
  if (!existsSync(path.join(dir, 'app.js'))) return undefined;
  const assets = new Map<string, Asset>();
  const hash = createHash('sha256');
  for (const name of listFiles(dir).sort()) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const body = readFileSync(path.join(dir, name));
    hash.update(name).update(body);
    assets.set(name, { type, body, gzip: gzipSync(body, { level: 9 }) });
  }
  const version = hash.digest('hex').slice(0, 16);
  const base = `${DASHBOARD_PATH}/assets/${version}`;
  // Every module is announced up front, so the browser fetches them in parallel instead of one import
  // level at a time.
  const preloads = [...assets.keys()]
    .filter((name) => name.endsWith('.js') && name !== 'app.js')
    .map((name) => `<link rel="modulepreload" href="${base}/${name}">`)
    .join('\n');
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Tollgate dashboard</title>
<link rel="icon" href="${base}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${base}/dashboard.css">
<script type="module" src="${base}/app.js"></script>
${preloads}
</head>
<body>
<div id="root"><p class="loading" role="status">Loading the dashboard…</p></div>
<noscript><p>The Tollgate dashboard needs JavaScript.</p></noscript>
</body>
</html>
`;
  return { version, assets, page };
}

function setSecurityHeaders(res: Response): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}

/** `GET /dashboard` (the page) and `GET /dashboard/assets/<version>/<file>` (its modules and style). */
export function dashboardRouter(build = loadDashboardBuild()): Router {
  const router = Router();
  router.get([DASHBOARD_PATH, `${DASHBOARD_PATH}/`], (_req: Request, res: Response) => {
    setSecurityHeaders(res);
    res.setHeader('Cache-Control', 'no-store');
    if (!build) {
      res.status(503).type('text').send('The dashboard is not built: run `npm run build`.\n');
      return;
    }
    res.type('html').send(build.page);
  });
  router.get(`${DASHBOARD_PATH}/assets/:version/*file`, (req: Request, res: Response, next) => {
    const file = (req.params as { file?: string[] }).file?.join('/') ?? '';
    const asset = build && req.params.version === build.version ? build.assets.get(file) : undefined;
    if (!asset) return next();
    setSecurityHeaders(res);
    // The version in the path changes with any file, so a cached copy can never be stale.
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('Vary', 'Accept-Encoding');
    res.type(asset.type);
    if (req.acceptsEncodings('gzip') === 'gzip') {
      res.setHeader('Content-Encoding', 'gzip');
      res.send(asset.gzip);
    } else {
      res.send(asset.body);
    }
  });
  return router;
}
