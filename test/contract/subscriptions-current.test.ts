import { startTestServer, type TestServer } from '../helpers/server.js';
import { sessionTokenFor } from '../helpers/stripe-fixtures.js';

/** `GET /v1/subscriptions/current`: whose subscription a credential may ask for, and the errors. */

let server: TestServer;
let app: { appId: string; apiKey: string };
let customerId: string;

beforeAll(async () => {
  server = await startTestServer();
  app = await server.createApp();
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${app.apiKey}`)
    .send({ email: 'c@example.com' });
  customerId = res.body.id;
});
afterAll(async () => {
  await server.close();
});

function current(query: Record<string, string>, token: string | null = app.apiKey) {
  const req = server.http.get('/v1/subscriptions/current').query(query);
  if (token) req.set('authorization', `Bearer ${token}`);
  return req;
}

async function expectError(res: Awaited<ReturnType<typeof current>>, status: number, message: string) {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { statusCode: status, message, error: expect.any(String) },
  });
}

describe('GET /v1/subscriptions/current', () => {
  it('needs exactly one of customerId and organizationId with an API key', async () => {
    const message = 'exactly one of customerId or organizationId is required';
    await expectError(await current({}), 400, message);
    await expectError(await current({ customerId, organizationId: 'org_x' }), 400, message);
    await expectError(await current({ customerId, plan: 'x' }), 400, 'unknown field: plan');
  });

  it('answers 404 when the customer has no entitling subscription', async () => {
    await expectError(await current({ customerId }), 404, 'Subscription not found');
  });

  it("answers 404 for another app's customer and 403 for organizations when they are disabled", async () => {
    const other = await server.createApp();
    const theirs = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${other.apiKey}`)
      .send({ email: 'o@example.com' });
    await expectError(
      await current({ customerId: theirs.body.id }),
      404,
      `Customer ${theirs.body.id} not found`,
    );
    await expectError(
      await current({ organizationId: 'org_x' }),
      403,
      'Organizations are not enabled for this app',
    );
  });

  it("uses a session's own context and refuses query parameters with it", async () => {
    const token = await sessionTokenFor(server, app.appId, customerId);
    await expectError(await current({}, token), 404, 'Subscription not found');
    await expectError(
      await current({ customerId }, token),
      400,
      'a session token uses its own context: customerId and organizationId are for API keys',
    );
  });

  it('answers 401 without a credential and 403 to the admin token', async () => {
    await expectError(await current({ customerId }, null), 401, 'Invalid or missing credentials');
    await expectError(
      await current({ customerId }, server.adminToken),
      403,
      'This operation needs an API key or a customer session token',
    );
  });

  it('answers null over GraphQL when there is no subscription', async () => {
    const res = await server.graphql(
      'query($c: ID) { currentSubscription(customerId: $c) { id } }',
      { c: customerId },
      app.apiKey,
    );
    expect(res.body).toEqual({ data: { currentSubscription: null } });
  });
});
