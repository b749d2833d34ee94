import { ApolloServer } from '@apollo/server';
import { jest } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The body of an answer refused before execution: `statusCode` is the HTTP status (400 unless said). */
function refused(code: string, message: string | RegExp, statusCode = 400) {
  return {
    errors: [
      expect.objectContaining({
        message: typeof message === 'string' ? message : expect.stringMatching(message),
        extensions: { code, statusCode },
      }),
    ],
  };
}

describe('GraphQL over HTTP (Apollo Server, src/graphql/apollo.ts)', () => {
  let server: TestServer;
  let apiKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ apiKey } = await server.createApp());
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers /graphql through an Apollo Server instance', async () => {
    const execute = jest.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');
    try {
      const res = await server.http.post('/graphql').send({ query: '{ __typename }' });
      expect(res.status).toBe(200);
      expect(execute).toHaveBeenCalledTimes(1);
      expect(execute.mock.contexts[0]).toBeInstanceOf(ApolloServer);
      expect(execute.mock.calls[0]?.[0].httpGraphQLRequest).toMatchObject({
        method: 'POST',
        body: { query: '{ __typename }' },
      });
    } finally {
      execute.mockRestore();
    }
  });

  it('answers a POST with JSON: 200, the data, JSON with a charset, no-store', async () => {
    const res = await server.http.post('/graphql').send({ query: '{ __typename }' });
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"data":{"__typename":"Query"}}\n');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers in application/graphql-response+json when Accept prefers it, and 406 before running anything when Accept takes no JSON', async () => {
    const preferred = await server.http
      .post('/graphql')
      .set('accept', 'application/graphql-response+json, application/json;q=0.9')
      .send({ query: '{ __typename }' });
    expect(preferred.status).toBe(200);
    expect(preferred.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(JSON.parse(preferred.text)).toEqual({ data: { __typename: 'Query' } });

    const countCustomers = () =>
      server.deps.orm.em.fork().getConnection().execute('select count(*)::int as n from customer');
    const customersBefore = await countCustomers();
    const refusedAccept = await server.http
      .post('/graphql')
      .set('accept', 'text/html')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ query: 'mutation { createCustomer(input: { email: "never@example.com" }) { id } }' });
    expect(refusedAccept.status).toBe(406);
    expect(JSON.parse(refusedAccept.text)).toEqual(
      refused('BAD_REQUEST', /does not accept application\/json/, 406),
    );
    expect(await countCustomers()).toEqual(customersBefore);
  });

  it('says 406 in the HTTP status and in extensions.statusCode alike for a GET with Accept: text/html', async () => {
    const res = await server.http
      .get('/graphql')
      .query({ query: '{ __typename }' })
      .set('accept', 'text/html')
      .set('apollo-require-preflight', 'true');
    expect(res.status).toBe(406);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(res.text)).toEqual({
      errors: [
        {
          message:
            "An 'accept' header was provided for this request which does not accept application/json; charset=utf-8 or application/graphql-response+json; charset=utf-8",
          extensions: { code: 'BAD_REQUEST', statusCode: 406 },
        },
      ],
    });
  });

  it('refuses form-like requests without a preflight header (CSRF), and serves them with one', async () => {
    const form = await server.http
      .post('/graphql')
      .set('content-type', 'text/plain')
      .send(JSON.stringify({ query: '{ __typename }' }));
    expect(form.status).toBe(400);
    expect(form.body).toEqual(refused('BAD_REQUEST', /Cross-Site Request Forgery/));

    const plainGet = await server.http.get('/graphql').query({ query: '{ __typename }' });
    expect(plainGet.status).toBe(400);
    expect(plainGet.body).toEqual(refused('BAD_REQUEST', /Cross-Site Request Forgery/));

    const preflightedGet = await server.http
      .get('/graphql')
      .query({ query: '{ __typename }' })
      .set('apollo-require-preflight', 'true');
    expect(preflightedGet.status).toBe(200);
    expect(preflightedGet.body).toEqual({ data: { __typename: 'Query' } });
    const namedGet = await server.http
      .get('/graphql')
      .query({ query: 'query Name { __typename }' })
      .set('x-apollo-operation-name', 'Name');
    expect(namedGet.status).toBe(200);
  });

  it('answers GET with queries only, and other methods not at all', async () => {
    const mutation = await server.http
      .get('/graphql')
      .query({ query: 'mutation { createCustomer(input: { email: "get@example.com" }) { id } }' })
      .set('apollo-require-preflight', 'true')
      .set('authorization', `Bearer ${apiKey}`);
    expect(mutation.status).toBe(405);
    expect(mutation.headers.allow).toBe('POST');
    expect(mutation.body).toEqual(
      refused('BAD_REQUEST', 'GET requests only support query operations, not mutation operations', 405),
    );

    const put = await server.http
      .put('/graphql')
      .set('content-type', 'application/json')
      .send({ query: '{ __typename }' });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, POST');
    expect(put.body).toEqual(refused('BAD_REQUEST', 'Apollo Server supports only GET/POST requests.', 405));

    const badSearches: Array<[string, string]> = [
      [
        'query=%7B__typename%7D&operationName=A&operationName=B',
        "The 'operationName' search parameter may only be specified once.",
      ],
      [
        'query=%7B__typename%7D&variables=%7Bnot%20json',
        'The variables search parameter contains invalid JSON.',
      ],
      [
        'query=%7B__typename%7D&extensions=%5B1%5D',
        'The extensions search parameter should contain a JSON-encoded object.',
      ],
    ];
    for (const [search, message] of badSearches) {
      const res = await server.http.get(`/graphql?${search}`).set('apollo-require-preflight', 'true');
      expect({ search, status: res.status, body: res.body }).toEqual({
        search,
        status: 400,
        body: refused('BAD_REQUEST', message),
      });
    }

    const formGet = await server.http
      .get('/graphql')
      .query({ query: '{ __typename }' })
      .set('content-type', 'text/plain')
      .set('apollo-require-preflight', 'true');
    expect(formGet.status).toBe(415);
    expect(formGet.body).toEqual(
      refused(
        'BAD_REQUEST',
        'GET requests may not have a content-type header other than application/json.',
        415,
      ),
    );
  });

  it('refuses malformed bodies, documents and operations with 400 and the code that says why', async () => {
    const cases: Array<[object, string, string | RegExp]> = [
      [{}, 'BAD_REQUEST', 'POST body missing, invalid Content-Type, or JSON object has no keys.'],
      [{ query: 42 }, 'BAD_REQUEST', 'GraphQL queries must be strings.'],
      [{ query: '{ __typename }', variables: '{}' }, 'BAD_REQUEST', /recursively JSON-encoded string/],
      [
        { query: '{ __typename }', variables: [1] },
        'BAD_REQUEST',
        '`variables` in a POST body must be an object if provided.',
      ],
      [
        { query: '{ __typename }', operationName: 7 },
        'BAD_REQUEST',
        '`operationName` in a POST body must be a string if provided.',
      ],
      [{ variables: {} }, 'BAD_REQUEST', /must contain a non-empty `query`/],
      [{ query: '{ __typename', operationName: null }, 'GRAPHQL_PARSE_FAILED', /^Syntax Error/],
      [{ query: '{ nope }' }, 'GRAPHQL_VALIDATION_FAILED', /Cannot query field "nope"/],
      [
        { query: 'query A { __typename } query B { __typename }' },
        'OPERATION_RESOLUTION_FAILURE',
        'Must provide operation name if query contains multiple operations.',
      ],
      [
        { query: 'query A { __typename }', operationName: 'B' },
        'OPERATION_RESOLUTION_FAILURE',
        'Unknown operation named "B".',
      ],
    ];
    for (const [body, code, message] of cases) {
      const res = await server.http.post('/graphql').send(body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body).toEqual(refused(code, message));
      // The same body a second time gets the same answer (nothing refused is cached as valid).
      const again = await server.http.post('/graphql').send(body);
      expect(again.body).toEqual(res.body);
    }
  });

  it('answers variables that do not coerce with BAD_USER_INPUT and 400, and resolver errors with 200 beside data', async () => {
    const coercion = await server.http
      .post('/graphql')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ query: 'query ($id: ID!) { customer(id: $id) { id } }', variables: {} });
    expect(coercion.status).toBe(400);
    expect(coercion.body).toEqual(
      refused('BAD_USER_INPUT', 'Variable "$id" of required type "ID!" was not provided.'),
    );
    expect(coercion.body.data).toBeUndefined();

    const missing = await server.http
      .post('/graphql')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ query: '{ customer(id: "cus_missing") { id } }' });
    expect(missing.status).toBe(200);
    expect(missing.body.data).toBeNull();
    expect(missing.body.errors).toEqual([
      expect.objectContaining({ path: ['customer'], extensions: { code: 'NOT_FOUND', statusCode: 404 } }),
    ]);
  });
});
