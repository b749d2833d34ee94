import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });
const email = (label: string) => `${label}-${randomBytes(5).toString('hex')}@example.com`;

/** A distinct query text per call, so each test starts with a hash no app has registered. */
const typename = () => `query Apq${randomBytes(4).toString('hex')} { __typename }`;

describe('automatic persisted queries on /graphql', () => {
  let server: TestServer;
  let apiKey: string;
  let otherApiKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ apiKey } = await server.createApp());
    ({ apiKey: otherApiKey } = await server.createApp());
  });
  afterAll(async () => {
    await server.close();
  });

  function post(body: object, token: string | null = apiKey, idempotencyKey?: string) {
    const req = server.http.post('/graphql');
    if (token) req.set('authorization', `Bearer ${token}`);
    if (idempotencyKey) req.set('idempotency-key', idempotencyKey);
    return req.send(body);
  }

  const notFound = {
    errors: [
      {
        message: 'PersistedQueryNotFound',
        extensions: { code: 'PERSISTED_QUERY_NOT_FOUND', statusCode: 200 },
      },
    ],
  };

  it('answers an unknown hash with PERSISTED_QUERY_NOT_FOUND, keeps a hash sent with its query, then answers the hash alone', async () => {
    const query = typename();
    const unknown = await post({ extensions: persisted(query) });
    expect(unknown.status).toBe(200);
    expect(unknown.headers['cache-control']).toBe('no-store');
    expect(unknown.body).toEqual(notFound);

    const registered = await post({ query, extensions: persisted(query) });
    expect(registered.status).toBe(200);
    expect(registered.body).toEqual({ data: { __typename: 'Query' } });

    const byHash = await post({ extensions: persisted(query) });
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual({ data: { __typename: 'Query' } });

    // GET, as Apollo Client sends hashed queries: the hash in `extensions`, no `query`.
    const get = await server.http
      .get('/graphql')
      .query({ extensions: JSON.stringify(persisted(query)) })
      .set('authorization', `Bearer ${apiKey}`)
      .set('apollo-require-preflight', 'true');
    expect(get.status).toBe(200);
    expect(get.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('keeps each app’s queries to itself: another app can neither use nor probe them', async () => {
    const query = typename();
    expect((await post({ query, extensions: persisted(query) })).status).toBe(200);
    const other = await post({ extensions: persisted(query) }, otherApiKey);
    expect(other.body).toEqual(notFound);
    // The owner still has it.
    expect((await post({ extensions: persisted(query) })).body).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses a hash that does not match its query with 400, and keeps nothing', async () => {
    const query = typename();
    const wrong = await post({ query, extensions: persisted(`${query} `) });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toEqual({
      errors: [
        {
          message: 'provided sha does not match query',
          extensions: { code: 'BAD_REQUEST', statusCode: 400 },
        },
      ],
    });
    expect((await post({ extensions: persisted(`${query} `) })).body).toEqual(notFound);

    const version = await post({
      query,
      extensions: { persistedQuery: { version: 2, sha256Hash: sha256(query) } },
    });
    expect(version.status).toBe(400);
    expect(version.body.errors[0].message).toBe('Unsupported persisted query version');
  });

  it('does not keep a query that was refused (here by validation)', async () => {
    const query = `query Bad${randomBytes(4).toString('hex')} { nope }`;
    const refused = await post({ query, extensions: persisted(query) });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED', statusCode: 400 });
    expect((await post({ extensions: persisted(query) })).body).toEqual(notFound);
  });

  it('tells anonymous callers persisted queries are not supported, so clients send the text', async () => {
    const query = typename();
    const res = await post({ query, extensions: persisted(query) }, null);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      errors: [
        {
          message: 'PersistedQueryNotSupported',
          extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED', statusCode: 200 },
        },
      ],
    });
  });

  it('checks a hash-only request against the cost budget with its variables, as the full text', async () => {
    // Eight pages of `$n` customers: complexity 8 × (1 + 7n), within the budget of 5000 for n = 1, not for 100.
    const pages = Array.from(
      { length: 8 },
      (_, i) => `p${i}: customers(limit: $n) { data { id email name metadata createdAt updatedAt } }`,
    );
    const query = `query Page${randomBytes(4).toString('hex')}($n: Int!) { ${pages.join(' ')} }`;
    expect((await post({ query, variables: { n: 1 }, extensions: persisted(query) })).status).toBe(200);
    const full = await post({ query, variables: { n: 100 } });
    expect(full.status).toBe(400);
    expect(full.body.errors[0].extensions).toEqual({ code: 'QUERY_TOO_COMPLEX', statusCode: 400 });
    const byHash = await post({ variables: { n: 100 }, extensions: persisted(query) });
    expect(byHash.status).toBe(400);
    expect(byHash.body).toEqual(full.body);
  });

  it('replays a hash-only mutation sent again with the same Idempotency-Key, running it once', async () => {
    const query = `mutation Create${randomBytes(4).toString('hex')}($input: CreateCustomerInput!) { createCustomer(input: $input) { id email } }`;
    const first = await post({
      query,
      variables: { input: { email: email('apq') } },
      extensions: persisted(query),
    });
    expect(first.status).toBe(200);

    const address = email('apq-idem');
    const key = randomUUID();
    const body = { variables: { input: { email: address } }, extensions: persisted(query) };
    const once = await post(body, apiKey, key);
    expect(once.status).toBe(200);
    expect(once.body.data.createCustomer.email).toBe(address);
    expect(once.headers['idempotent-replayed']).toBeUndefined();
    const again = await post(body, apiKey, key);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(once.body);
    const list = await server.http
      .get(`/v1/customers?email=${encodeURIComponent(address)}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(list.body.pagination.total).toBe(1);
  });
});
