import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The rules behind the dashboard's everyday actions, over GraphQL and REST: an archived plan sells no
 * more but keeps its subscribers, a test event is refused for a disabled endpoint and another app's,
 * an API key's name is checked, and the operator's customer writes name their app.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const ARCHIVE = `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id archived } }`;

describe('an archived plan', () => {
  it('refuses plan changes to it, and keeps entitling the subscriptions already on it', async () => {
    const { appId, apiKey } = await server.createApp();
    const billing = new BillingFixtures(server, appId);
    const basic = await billing.plan({ slug: 'basic', features: { sso: true } });
    const pro = await billing.plan({ slug: 'pro', unitAmount: 5000 });
    const customer = await billing.customer();
    const { id } = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      basic,
    );
    for (const slug of [basic.slug, pro.slug]) {
      const res = await server.graphql(
        ARCHIVE,
        { appId, input: { id: slug, name: slug, archived: true } },
        server.adminToken,
      );
      expect(res.body.data.upsertPlan).toEqual({ id: slug, archived: true });
    }
    const change = await server.http
      .post(`/v1/subscriptions/${id}/change-plan`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ planId: 'pro' });
    expect(change.status).toBe(400);
    expect(change.body.message).toBe('planId: plan "pro" is archived: nothing new moves to it');
    const check = await server.http
      .get('/v1/entitlements/check/sso')
      .query({ customerId: customer.id })
      .set('authorization', `Bearer ${apiKey}`);
    expect(check.body).toMatchObject({ allowed: true });
  });
});

describe('sendWebhookTestEvent', () => {
  it("answers 409 for a disabled endpoint and 404 for another app's", async () => {
    const { appId } = await server.createApp();
    const other = await server.createApp();
    const created = await server.graphql(
      `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }`,
      { input: { appId, url: 'http://127.0.0.1:9/hooks' } },
      server.adminToken,
    );
    const endpointId = created.body.data.createWebhookEndpoint.endpoint.id;
    await server.graphql(
      'mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { enabled: false }) { id } }',
      { id: endpointId },
      server.adminToken,
    );
    const send = (token: string) =>
      server.graphql(
        'mutation($id: ID!) { sendWebhookTestEvent(id: $id) { id } }',
        { id: endpointId },
        token,
      );
    const disabled = await send(server.adminToken);
    expect(disabled.body.errors?.[0]).toMatchObject({
      message: 'This endpoint is disabled: enable it to send it a test event',
      extensions: { code: 'CONFLICT' },
    });
    const foreign = await send(other.apiKey);
    expect(foreign.body.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND' });
    const deliveries = await server.graphql(
      'query($id: ID!) { webhookDeliveries(endpointId: $id) { id } }',
      { id: endpointId },
      server.adminToken,
    );
    expect(deliveries.body.data.webhookDeliveries).toEqual([]);
  });
});

describe("the operator's writes", () => {
  it('refuses an API key name over 100 characters, naming the field', async () => {
    const { appId } = await server.createApp();
    const res = await server.graphql(
      'mutation($appId: ID!, $name: String) { createApiKey(appId: $appId, name: $name) { apiKey } }',
      { appId, name: 'k'.repeat(101) },
      server.adminToken,
    );
    expect(res.body.errors?.[0]).toMatchObject({
      message: 'name: must be at most 100 characters',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  it('creates a customer only in the app the admin token names', async () => {
    const { appId, apiKey } = await server.createApp();
    const create = (variables: Record<string, unknown>) =>
      server.graphql(
        'mutation($appId: ID, $input: CreateCustomerInput!) { createCustomer(appId: $appId, input: $input) { id email } }',
        variables,
        server.adminToken,
      );
    const unnamed = await create({ input: { email: 'nobody@example.com' } });
    expect(unnamed.body.errors?.[0]?.message).toBe('appId: is required for the admin token');
    const named = await create({ appId, input: { email: 'ada@example.com' } });
    const id = named.body.data.createCustomer.id;
    const read = await server.http.get(`/v1/customers/${id}`).set('authorization', `Bearer ${apiKey}`);
    expect(read.status).toBe(200);
    expect(read.body.email).toBe('ada@example.com');
  });
});
