import { createRequire } from 'node:module';
import path from 'node:path';
import { type Request, type Response, Router } from 'express';

const require = createRequire(import.meta.url);

function packageFile(pkg: string, file: string): string {
  return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);
}

/** GraphiQL's browser builds, served from the installed packages: the page works without internet. */
const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  'react.js': { file: packageFile('react', 'umd/react.production.min.js'), type: 'text/javascript' },
  'react-dom.js': {
    file: packageFile('react-dom', 'umd/react-dom.production.min.js'),
    type: 'text/javascript',
  },
  'graphiql.js': { file: packageFile('graphiql', 'graphiql.min.js'), type: 'text/javascript' },
  'graphiql.css': { file: packageFile('graphiql', 'graphiql.min.css'), type: 'text/css' },
};

const ASSET_BASE = '/graphql/assets';

/** Starts GraphiQL with the header editor open on an Authorization header to fill; headers are never stored. */
const START_SCRIPT = `
const fetcher = GraphiQL.createFetcher({ url: ${JSON.stringify('/graphql')} });
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    fetcher,
    defaultEditorToolsVisibility: 'headers',
    // Empty until filled: an empty Authorization is anonymous, so the schema still loads for the docs.
    defaultHeaders: JSON.stringify({ Authorization: '' }, null, 2),
    shouldPersistHeaders: false,
    defaultQuery: [
      '# Set your credential in the Headers tab below,',
      '# e.g. "Authorization": "Bearer tg_sk_…",',
      '# then run this query (▶ or Ctrl-Enter).',
      '{',
      '  customers(limit: 5) {',
      '    data { id email name createdAt }',
      '    pagination { total }',
      '  }',
      '}',
      '',
    ].join('\\n'),
  }),
);
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tollgate GraphiQL</title>
<link rel="stylesheet" href="${ASSET_BASE}/graphiql.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<script src="${ASSET_BASE}/react.js"></script>
<script src="${ASSET_BASE}/react-dom.js"></script>
<script src="${ASSET_BASE}/graphiql.js"></script>
<script src="${ASSET_BASE}/start.js"></script>
</body>
</html>
`;

// GraphiQL styles elements inline and draws icons from data: URLs; everything else comes from here.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** A browser asking for a page (not a GraphQL client doing a GET query) gets GraphiQL. */
function wantsPage(req: Request): boolean {
  return req.query.query === undefined && req.accepts(['application/json', 'text/html']) === 'text/html';
}

/**
 * GraphiQL at `GET /graphql` for browsers, and its assets under `/graphql/assets/`. Mounted before
 * the credential and rate-limit middleware: the page and its scripts are static and read no data.
 */
export function graphiqlRouter(): Router {
  const router = Router();
  router.get('/graphql', (req: Request, res: Response, next) => {
    if (!wantsPage(req)) return next();
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(PAGE);
  });
  router.get(`${ASSET_BASE}/start.js`, (_req, res) => {
    res.type('text/javascript').send(START_SCRIPT);
  });
  router.get(`${ASSET_BASE}/:name`, (req: Request, res: Response, next) => {
    const asset = Object.hasOwn(ASSETS, String(req.params.name))
      ? ASSETS[String(req.params.name)]
      : undefined;
    if (!asset) return next();
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type(asset.type).sendFile(asset.file);
  });
  return router;
}
