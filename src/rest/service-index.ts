import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type RequestHandler, Router } from 'express';
import type { Config } from '../config.js';
import { PROJECT_ROOT } from '../infra/project-root.js';

/**
 * What a newcomer's first request finds: `GET /` and `GET /v1` name the service and link to its
 * documents; `GET /openapi.yaml` serves the REST API's description (the file the tests validate every
 * `/v1` answer against, so what is served is what the code does). Links are paths, not URLs: the Host
 * header is the client's to choose and PUBLIC_BASE_URL may name another front door.
 */

const PACKAGE = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
};
export const OPENAPI_FILE = path.join(PROJECT_ROOT, 'schema', 'openapi.yaml');
export const OPENAPI_PATH = '/openapi.yaml';

export interface ServiceIndex {
  readonly name: string;
  readonly version: string;
  readonly links: Readonly<Record<string, string>>;
}

export function serviceIndex(config: Config): ServiceIndex {
  return {
    name: PACKAGE.name,
    version: PACKAGE.version,
    links: {
      // The REST reference; the GraphQL API documents itself (GraphiQL's explorer, introspection).
      docs: OPENAPI_PATH,
      openapi: OPENAPI_PATH,
      rest: '/v1',
      graphql: '/graphql',
      ...(config.graphql.graphiql ? { graphiql: '/graphql' } : {}),
      // The interactive REST reference rendered from the same document, when served.
      ...(config.docs ? { apiReference: '/docs' } : {}),
      health: '/healthz',
      readiness: '/readyz',
    },
  };
}

export function serviceIndexHandler(config: Config): RequestHandler {
  const body = serviceIndex(config);
  return (_req, res) => {
    res.json(body);
  };
}

/**
 * `GET /` and `GET /openapi.yaml`, outside `/v1` and its credentials, like the health probes. The
 * document is read once, at start: a missing file is a broken install and should fail the start.
 */
export function serviceIndexRouter(config: Config): Router {
  const document = readFileSync(OPENAPI_FILE);
  const router = Router();
  router.get('/', serviceIndexHandler(config));
  router.get(OPENAPI_PATH, (_req, res) => {
    // RFC 9512's media type for YAML.
    res.type('application/yaml; charset=utf-8').send(document);
  });
  return router;
}
