import { withContext } from '../../src/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let app: { appId: string; apiKey: string };
let otherApp: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer();
  app = await server.createApp();
  otherApp = await server.createApp();
});
afterAll(async () => {
  await server.close();
});

const CUSTOMER = 'id email name metadata paymentCustomerId createdAt updatedAt';
const CREATE = `mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { ${CUSTOMER} } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateCustomerInput!) { updateCustomer(id: $id, input: $input) { ${CUSTOMER} } }`;
const GET = `query($id: ID!) { customer(id: $id) { ${CUSTOMER} } }`;
const LIST = `query($email: String, $limit: Int, $offset: Int) {
  customers(email: $email, limit: $limit, offset: $offset) { data { ${CUSTOMER} } pagination { total limit offset } }
}`;

let sequence = 0;
function uniqueEmail(local = 'gql'): string {
  sequence += 1;
  return `${local}.${sequence}.${Date.now()}@example.com`;
}

/** The REST answer to the same input, to compare outcomes across the two APIs. */
async function restCreate(body: unknown, key = app.apiKey) {
  return server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${key}`)
    .send(body as object);
}

function expectGraphQLError(
  res: { status: number; body: { data?: unknown; errors?: any[] } },
  statusCode: number,
  code: string,
  message: string,
) {
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message, extensions: { code, statusCode } });
}

describe('GraphQL customers', () => {
  it('creates, reads, updates and lists customers through the same core as REST', async () => {
    const email = uniqueEmail();
    const created = await server.graphql(
      CREATE,
      { input: { email, name: 'Grace', metadata: { tier: 'a', drop: null } } },
      app.apiKey,
    );
    expect(created.body.errors).toBeUndefined();
    const customer = created.body.data.createCustomer;
    expect(customer).toEqual({
      id: expect.stringMatching(/^cus_/),
      email,
      name: 'Grace',
      metadata: { tier: 'a' },
      paymentCustomerId: null,
      createdAt: expect.any(String),
      updatedAt: customer.createdAt,
    });

    const rest = await server.http
      .get(`/v1/customers/${customer.id}`)
      .set('authorization', `Bearer ${app.apiKey}`);
    expect(rest.body).toEqual(customer);

    const updated = await server.graphql(
      UPDATE,
      { id: customer.id, input: { name: null, metadata: { tier: null, seats: 5 } } },
      app.apiKey,
    );
    expect(updated.body.data.updateCustomer).toMatchObject({ name: null, metadata: { seats: 5 } });

    const read = await server.graphql(GET, { id: customer.id }, app.apiKey);
    expect(read.body.data.customer).toEqual(updated.body.data.updateCustomer);

    const listed = await server.graphql(LIST, { email: email.toUpperCase() }, app.apiKey);
    expect(listed.body.data.customers).toEqual({
      data: [updated.body.data.updateCustomer],
      pagination: { total: 1, limit: 20, offset: 0 },
    });
  });

  it('pages newest first with limit and offset', async () => {
    const fresh = await server.createApp();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await server.graphql(CREATE, { input: { email: uniqueEmail('page') } }, fresh.apiKey);
      ids.push(res.body.data.createCustomer.id);
    }
    const page = await server.graphql(LIST, { limit: 2, offset: 1 }, fresh.apiKey);
    expect(page.body.data.customers.pagination).toEqual({ total: 3, limit: 2, offset: 1 });
    const all = await server.graphql(LIST, {}, fresh.apiKey);
    expect(all.body.data.customers.data.map((c: { id: string }) => c.id)).toHaveLength(3);
    expect(page.body.data.customers.data.map((c: { id: string }) => c.id)).toEqual(
      all.body.data.customers.data.slice(1, 3).map((c: { id: string }) => c.id),
    );
  });

  it.each([
    ['an invalid e-mail', { email: 'nope' }],
    ['an empty name', { email: 'valid.address@example.com', name: '' }],
    [
      'too many metadata keys',
      {
        email: 'valid.address@example.com',
        metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
      },
    ],
    [
      'a metadata key over 40 characters',
      { email: 'valid.address@example.com', metadata: { ['k'.repeat(41)]: 1 } },
    ],
  ])('rejects %s with the same status and message as REST', async (_label, input) => {
    const rest = await restCreate(input);
    expect(rest.status).toBe(400);
    const res = await server.graphql(CREATE, { input }, app.apiKey);
    expectGraphQLError(res, 400, 'BAD_USER_INPUT', rest.body.message);
  });

  it('rejects a metadata value that is not an object with 400', async () => {
    const res = await server.graphql(
      CREATE,
      { input: { email: uniqueEmail(), metadata: [1, 2] } },
      app.apiKey,
    );
    expect(res.body.errors?.[0]?.extensions?.statusCode).toBe(400);
  });

  it('rejects limit and offset out of range with the same message as REST', async () => {
    for (const variables of [{ limit: 0 }, { limit: 101 }, { offset: -1 }]) {
      const rest = await server.http
        .get('/v1/customers')
        .query(variables)
        .set('authorization', `Bearer ${app.apiKey}`);
      expect(rest.status).toBe(400);
      expectGraphQLError(
        await server.graphql(LIST, variables, app.apiKey),
        400,
        'BAD_USER_INPUT',
        rest.body.message,
      );
    }
  });

  it('answers CONFLICT (409) for a duplicate e-mail in any case, like REST', async () => {
    const email = uniqueEmail('dupe');
    expect((await server.graphql(CREATE, { input: { email } }, app.apiKey)).body.errors).toBeUndefined();
    const res = await server.graphql(CREATE, { input: { email: email.toUpperCase() } }, app.apiKey);
    expectGraphQLError(res, 409, 'CONFLICT', `A customer with e-mail ${email.toUpperCase()} already exists`);
    const rest = await restCreate({ email });
    expect(rest.status).toBe(409);
  });

  it("answers NOT_FOUND (404) for another app's customer", async () => {
    const theirs = await server.graphql(CREATE, { input: { email: uniqueEmail() } }, otherApp.apiKey);
    const id = theirs.body.data.createCustomer.id;
    expectGraphQLError(
      await server.graphql(GET, { id }, app.apiKey),
      404,
      'NOT_FOUND',
      `Customer ${id} not found`,
    );
    expectGraphQLError(
      await server.graphql(UPDATE, { id, input: { name: 'x' } }, app.apiKey),
      404,
      'NOT_FOUND',
      `Customer ${id} not found`,
    );
  });

  it('answers UNAUTHENTICATED (401) without a credential and FORBIDDEN (403) for a session token', async () => {
    const created = await server.graphql(CREATE, { input: { email: uniqueEmail('session') } }, app.apiKey);
    const customerId = created.body.data.createCustomer.id;
    const { token } = await withContext(server.deps.orm, () =>
      server.services.sessions.issue({ appId: app.appId, customerId }),
    );
    const operations: [string, Record<string, unknown>][] = [
      [LIST, {}],
      [GET, { id: customerId }],
      [CREATE, { input: { email: uniqueEmail() } }],
      [UPDATE, { id: customerId, input: { name: 'x' } }],
    ];
    for (const [query, variables] of operations) {
      expectGraphQLError(
        await server.graphql(query, variables),
        401,
        'UNAUTHENTICATED',
        'Invalid or missing credentials',
      );
      expectGraphQLError(
        await server.graphql(query, variables, token),
        403,
        'FORBIDDEN',
        'This operation needs an API key',
      );
    }
  });
});
