import { createHash } from 'node:crypto';
import express from 'express';
import { buildSchema, type GraphQLFormattedError } from 'graphql';
import request from 'supertest';
import type { GraphQLLimits } from '../../src/config.js';
import type { Principal } from '../../src/core/principal.js';
import { createGraphQLServer, graphqlHandler } from '../../src/graphql/apollo.js';
import { depthLimitRule } from '../../src/graphql/hardening.js';
import {
  keepPersistedQuery,
  PersistedQueryStore,
  persistedQueries,
} from '../../src/graphql/persisted-queries.js';
import { documentLimits } from '../../src/graphql/request-limits.js';
import { createLogger } from '../../src/infra/logger.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('the store of persisted queries', () => {
  it('keeps each app within its own byte bound: one app filling its share leaves another’s alone', () => {
    const store = new PersistedQueryStore(1000, 10);
    const kept = '{ __typename }';
    store.set('app:a', sha256(kept), kept);
    for (let i = 0; i < 100; i++) {
      const text = `{ f${i}: __typename }`;
      store.set('app:b', sha256(text), text);
    }
    expect(store.bytesOf('app:b')).toBeLessThanOrEqual(1000);
    expect(store.get('app:a', sha256(kept))).toBe(kept);
    expect(store.get('app:b', sha256(kept))).toBeUndefined();
  });

  it('counts a query’s text, not only its hash, and keeps none larger than an app’s share', () => {
    const store = new PersistedQueryStore(200, 10);
    const text = `{ __typename } #${'x'.repeat(300)}`;
    store.set('app:a', sha256(text), text);
    expect(store.get('app:a', sha256(text))).toBeUndefined();
    expect(store.bytesOf('app:a')).toBe(0);
  });

  it('forgets the app idle the longest when more apps than it holds send queries', () => {
    const store = new PersistedQueryStore(1000, 2);
    const text = '{ __typename }';
    store.set('app:a', sha256(text), text);
    store.set('app:b', sha256(text), text);
    expect(store.get('app:a', sha256(text))).toBe(text); // a is now the most recent
    store.set('app:c', sha256(text), text);
    expect(store.get('app:b', sha256(text))).toBeUndefined();
    expect(store.get('app:a', sha256(text))).toBe(text);
  });
});

describe('a hash-only request, resolved in front of the limits', () => {
  const limits = {
    authenticated: {
      maxDocumentBytes: 200,
      maxAliases: 2,
      maxFragmentSpreads: 10,
      maxFields: 50,
      maxComplexity: 1000,
      maxResolverCalls: 10,
    },
    anonymous: {
      maxDocumentBytes: 200,
      maxAliases: 2,
      maxFragmentSpreads: 10,
      maxFields: 50,
      maxComplexity: 1000,
      maxResolverCalls: 10,
    },
    maxDepth: 3,
    maxConcurrentPerCredential: 1,
    maxQueuedPerCredential: 1,
    queueTimeoutMs: 1000,
    maxConnectionsPerRequest: 1,
  } satisfies GraphQLLimits;

  async function appWith(store: PersistedQueryStore) {
    const server = await createGraphQLServer({
      schema: buildSchema('type Query { node: Node } type Node { id: ID child: Node }'),
      introspection: false,
      validationRules: [depthLimitRule(limits.maxDepth)],
      hideSuggestions: true,
      formatError: (formatted: GraphQLFormattedError) => ({
        message: formatted.message,
        extensions: { code: formatted.extensions?.code },
      }),
      logger: createLogger('silent'),
    });
    const app = express();
    app.use(express.json());
    const principal: Principal = { kind: 'apiKey', appId: 'app_1', apiKeyId: 'key_1' };
    app.use((req, _res, next) => {
      req.principal = principal;
      next();
    });
    app.use(
      '/graphql',
      persistedQueries(store),
      documentLimits(limits),
      graphqlHandler(server, () => ({}), keepPersistedQuery(store)),
    );
    return app;
  }

  it('is refused by the size and alias limits and by the depth rule (depth 5 of 3) exactly as its text would be', async () => {
    const store = new PersistedQueryStore();
    const app = await appWith(store);
    const cases: Array<[string, string]> = [
      [`{ node { id } } #${'x'.repeat(300)}`, 'QUERY_TOO_LARGE'],
      ['{ a: node { id } b: node { id } c: node { id } }', 'QUERY_TOO_MANY_ALIASES'],
      // The depth rule's QUERY_TOO_DEEP runs in validation, whose errors Apollo codes as such.
      ['{ node { child { child { child { id } } } } }', 'GRAPHQL_VALIDATION_FAILED'],
    ];
    for (const [text, code] of cases) {
      // As if kept earlier under other limits: the store holds it, the request carries only its hash.
      store.set('app:app_1', sha256(text), text);
      const full = await request(app).post('/graphql').send({ query: text });
      const byHash = await request(app)
        .post('/graphql')
        .send({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256(text) } } });
      expect({ code, status: byHash.status, body: byHash.body }).toEqual({
        code,
        status: 400,
        body: full.body,
      });
      expect(byHash.body.errors[0].extensions.code).toBe(code);
    }
    expect(store.get('app:app_1', sha256('{ node { child { child { child { id } } } } }'))).toBeDefined();
  });
});
