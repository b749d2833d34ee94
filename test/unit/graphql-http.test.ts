import express from 'express';
import { buildSchema, type GraphQLFormattedError } from 'graphql';
import request from 'supertest';
import { graphqlHttpHandler } from '../../src/graphql/http.js';

const schema = buildSchema('type Query { hello: String }');

function appWith(context: () => unknown, seen: unknown[]) {
  const app = express();
  app.use(express.json());
  app.use(
    '/graphql',
    graphqlHttpHandler({
      schema,
      introspection: false,
      validationRules: [],
      hideSuggestions: true,
      formatError: (formatted: GraphQLFormattedError, error: unknown) => {
        seen.push(error);
        return { message: formatted.message, extensions: { code: formatted.extensions?.code } };
      },
      context,
    }),
  );
  return app;
}

describe('the GraphQL handler on its own', () => {
  it('answers a failure of its own (here the context) in GraphQL shape with 500, through formatError', async () => {
    const seen: unknown[] = [];
    const app = appWith(() => {
      throw new Error('context broke');
    }, seen);
    const res = await request(app).post('/graphql').send({ query: '{ hello }' });
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      errors: [{ message: 'context broke', extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
    });
    expect(seen).toHaveLength(1);
  });

  it('refuses introspection when it is off, in validation', async () => {
    const app = appWith(() => ({}), []);
    const res = await request(app).post('/graphql').send({ query: '{ __schema { queryType { name } } }' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toEqual({
      message: 'GraphQL introspection is not allowed here, but the query contained __schema or __type.',
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
    const plain = await request(app).post('/graphql').send({ query: '{ hello }' });
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({ data: { hello: null } });
  });
});
