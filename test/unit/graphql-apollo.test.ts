import express from 'express';
import { buildSchema, type GraphQLFormattedError } from 'graphql';
import request from 'supertest';
import { createGraphQLServer, graphqlHandler } from '../../src/graphql/apollo.js';
import { createLogger } from '../../src/infra/logger.js';

const schema = buildSchema('type Query { hello: String }');

async function appWith(context: () => object, seen: unknown[]) {
  const server = await createGraphQLServer({
    schema,
    introspection: false,
    validationRules: [],
    hideSuggestions: true,
    formatError: (formatted: GraphQLFormattedError, error: unknown) => {
      seen.push(error);
      return { message: formatted.message, extensions: { code: formatted.extensions?.code } };
    },
    logger: createLogger('silent'),
  });
  const app = express();
  app.use(express.json());
  app.use('/graphql', graphqlHandler(server, context));
  return app;
}

describe('the GraphQL handler on Apollo Server, on its own', () => {
  it('answers a failure of its own (here the context) in GraphQL shape with 500, through formatError', async () => {
    const seen: unknown[] = [];
    const app = await appWith(() => {
      throw new Error('context broke');
    }, seen);
    const res = await request(app).post('/graphql').send({ query: '{ hello }' });
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      errors: [
        { message: 'Context creation failed: context broke', extensions: { code: 'INTERNAL_SERVER_ERROR' } },
      ],
    });
    expect(seen).toHaveLength(1);
  });

  it('refuses introspection when it is off, in validation', async () => {
    const app = await appWith(() => ({}), []);
    const res = await request(app).post('/graphql').send({ query: '{ __schema { queryType { name } } }' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED' });
    expect(res.body.errors[0].message).toMatch(/^GraphQL introspection is not allowed/);
    const plain = await request(app).post('/graphql').send({ query: '{ hello }' });
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({ data: { hello: null } });
  });
});
