import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  createPaidPlan,
  payOnHostedPage,
  sessionTokenFor,
  signedNotification,
  stripeFor,
} from '../helpers/stripe-fixtures.js';
import { type ReceivedWebhook, verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Outbound webhooks end to end: endpoints managed over REST and GraphQL, and every event type arriving
 * at a real receiver on loopback, signed so that the Standard Webhooks library verifies it, after the
 * REST or GraphQL action (or the checkout loop through the emulator) that causes it.
 */

let server: TestServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  [server, receiver] = await Promise.all([startTestServer(), WebhookReceiver.start()]);
});
afterAll(async () => {
  await server.close();
  await receiver.close();
});

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

/** A new app with an endpoint at the receiver (path `/<tag>`), created over REST with its API key. */
async function appWithEndpoint(tag: string, events?: string[]) {
  const { appId, apiKey } = await server.createApp();
  const res = await server.http
    .post('/v1/webhook-endpoints')
    .set(auth(apiKey))
    .send({ url: `${receiver.url}/${tag}`, ...(events ? { events } : {}), description: tag });
  expect(res.status).toBe(201);
  return { appId, apiKey, endpoint: res.body.endpoint, secret: res.body.secret as string };
}

/** Waits for the one event of `type` whose data matches, verifies its signature, and returns it. */
async function arrived(
  secret: string,
  path: string,
  type: string,
  match: (data: any) => boolean = () => true,
): Promise<ReceivedWebhook> {
  const found = await eventually(
    () =>
      receiver.received.find((r) => r.payload.type === type && match(r.payload.data) && pathOf(r) === path),
    { what: `a ${type} event at ${path}`, timeoutMs: 20_000 },
  );
  expect(verify(secret, found)).toEqual(found.payload);
  expect(found.headers['webhook-id']).toMatch(/^msg_/);
  expect(found.headers['content-type']).toBe('application/json');
  expect(Object.keys(found.payload)).toEqual(['type', 'timestamp', 'data']);
  return found;
}

const pathOf = (r: ReceivedWebhook): string => r.path.slice(1);

describe('webhook endpoints (REST)', () => {
  it('creates, lists, reads, changes, rotates and deletes an endpoint with an API key', async () => {
    const { apiKey } = await server.createApp();
    const created = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: `${receiver.url}/crud`, events: ['customer.created'], description: 'CRM sync' });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const endpoint = created.body.endpoint;
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^we_/),
      url: `${receiver.url}/crud`,
      events: ['customer.created'],
      enabled: true,
      description: 'CRM sync',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const list = await server.http.get('/v1/webhook-endpoints').set(auth(apiKey));
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [endpoint] });
    const one = await server.http.get(`/v1/webhook-endpoints/${endpoint.id}`).set(auth(apiKey));
    expect(one.status).toBe(200);
    expect(one.body).toEqual(endpoint);
    // The secret is shown once, never again.
    expect(JSON.stringify(one.body)).not.toContain('whsec_');

    const patched = await server.http
      .patch(`/v1/webhook-endpoints/${endpoint.id}`)
      .set(auth(apiKey))
      .send({ events: [], enabled: false, description: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ events: [], enabled: false, description: null });

    const rotated = await server.http
      .post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`)
      .set(auth(apiKey));
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect(rotated.body.endpoint.id).toBe(endpoint.id);

    const deleted = await server.http.delete(`/v1/webhook-endpoints/${endpoint.id}`).set(auth(apiKey));
    expect(deleted.status).toBe(204);
    const gone = await server.http.get(`/v1/webhook-endpoints/${endpoint.id}`).set(auth(apiKey));
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({
      statusCode: 404,
      message: `Webhook endpoint ${endpoint.id} not found`,
      error: 'Not Found',
    });
  });

  it('refuses an unknown event type, a non-http(s) URL and unknown fields with 400', async () => {
    const { apiKey } = await server.createApp();
    const unknownType = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: `${receiver.url}/x`, events: ['customer.exploded'] });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.message).toMatch(
      /^events: unknown event type: customer\.exploded \(known: customer\.created, /,
    );

    const ftp = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: 'ftp://example.com/x' });
    expect(ftp.status).toBe(400);
    expect(ftp.body.message).toBe('url: must be an absolute http(s) URL including the scheme');

    const extra = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({ url: `${receiver.url}/x`, secret: 'mine' });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toBe('unknown field: secret');
  });

  it("answers 404 for another app's endpoint and delivery, and 403 to a customer session", async () => {
    const owner = await appWithEndpoint('isolated-owner');
    const other = await server.createApp();
    for (const [method, path] of [
      ['get', `/v1/webhook-endpoints/${owner.endpoint.id}`],
      ['patch', `/v1/webhook-endpoints/${owner.endpoint.id}`],
      ['delete', `/v1/webhook-endpoints/${owner.endpoint.id}`],
      ['post', `/v1/webhook-endpoints/${owner.endpoint.id}/rotate-secret`],
      ['get', `/v1/webhook-endpoints/${owner.endpoint.id}/deliveries`],
    ] as const) {
      const res = await server.http[method](path).set(auth(other.apiKey)).send({});
      expect(res.status).toBe(404);
    }
    const list = await server.http.get('/v1/webhook-endpoints').set(auth(other.apiKey));
    expect(list.body).toEqual({ data: [] });
    // Naming another app with an API key is answered as if that app did not exist.
    const named = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(other.apiKey))
      .send({ appId: owner.appId, url: `${receiver.url}/x` });
    expect(named.status).toBe(404);

    const customer = await server.http
      .post('/v1/customers')
      .set(auth(owner.apiKey))
      .send({ email: 'sess@example.com' });
    const token = await sessionTokenFor(server, owner.appId, customer.body.id);
    const asSession = await server.http.get('/v1/webhook-endpoints').set(auth(token));
    expect(asSession.status).toBe(403);
    const anonymous = await server.http.get('/v1/webhook-endpoints');
    expect(anonymous.status).toBe(401);
  });

  it('lets the admin token manage an app it names, and requires the name', async () => {
    const { appId } = await server.createApp();
    const unnamed = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(server.adminToken))
      .send({ url: `${receiver.url}/admin` });
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.message).toBe('appId: is required for the admin token');
    const created = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(server.adminToken))
      .send({ appId, url: `${receiver.url}/admin` });
    expect(created.status).toBe(201);
    const list = await server.http.get('/v1/webhook-endpoints').query({ appId }).set(auth(server.adminToken));
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([created.body.endpoint.id]);
  });
});

describe('webhook endpoints (GraphQL)', () => {
  it('creates with the admin token naming the app, lists, updates, rotates and deletes', async () => {
    const { appId, apiKey } = await server.createApp();
    const created = await server.graphql(
      `mutation($input: CreateWebhookEndpointInput!) {
         createWebhookEndpoint(input: $input) { secret endpoint { id url events enabled description createdAt } } }`,
      { input: { appId, url: `${receiver.url}/gql`, events: ['plan.updated'], description: 'ops' } },
      server.adminToken,
    );
    expect(created.body.errors).toBeUndefined();
    const { endpoint, secret } = created.body.data.createWebhookEndpoint;
    expect(secret).toMatch(/^whsec_/);
    expect(endpoint).toMatchObject({
      url: `${receiver.url}/gql`,
      events: ['plan.updated'],
      enabled: true,
      description: 'ops',
    });

    const withoutApp = await server.graphql(
      `mutation { createWebhookEndpoint(input: { url: "${receiver.url}/gql" }) { secret } }`,
      {},
      server.adminToken,
    );
    expect(withoutApp.body.errors?.[0]).toMatchObject({
      message: 'appId: is required for the admin token',
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
    });

    const listed = await server.graphql(`{ webhookEndpoints { id events } }`, {}, apiKey);
    expect(listed.body.data.webhookEndpoints).toEqual([{ id: endpoint.id, events: ['plan.updated'] }]);

    const updated = await server.graphql(
      `mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { events: [], enabled: false }) { events enabled } }`,
      { id: endpoint.id },
      apiKey,
    );
    expect(updated.body.data.updateWebhookEndpoint).toEqual({ events: [], enabled: false });

    const rotated = await server.graphql(
      `mutation($id: ID!) { rotateWebhookEndpointSecret(id: $id) { secret endpoint { id } } }`,
      { id: endpoint.id },
      apiKey,
    );
    expect(rotated.body.data.rotateWebhookEndpointSecret.secret).toMatch(/^whsec_/);

    const deliveries = await server.graphql(
      `query($id: ID!) { webhookDeliveries(endpointId: $id, limit: 5) { id } }`,
      { id: endpoint.id },
      apiKey,
    );
    expect(deliveries.body.data.webhookDeliveries).toEqual([]);

    const deleted = await server.graphql(
      `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { id } }`,
      { id: endpoint.id },
      apiKey,
    );
    expect(deleted.body.data.deleteWebhookEndpoint).toEqual({ id: endpoint.id });
    const after = await server.graphql(`{ webhookEndpoints { id } }`, {}, apiKey);
    expect(after.body.data.webhookEndpoints).toEqual([]);
  });
});

describe('events', () => {
  it('sends customer.created and customer.updated after the REST calls, with the customer as REST shows it', async () => {
    const { apiKey, secret } = await appWithEndpoint('customers');
    const created = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'ada@example.com', name: 'Ada', metadata: { tier: 'gold' } });
    expect(created.status).toBe(201);
    const first = await arrivedAt(secret, 'customers', 'customer.created', (d) => d.id === created.body.id);
    expect(first.payload.data).toEqual(created.body);
    expect(Date.parse(first.payload.timestamp)).not.toBeNaN();

    const updated = await server.http
      .patch(`/v1/customers/${created.body.id}`)
      .set(auth(apiKey))
      .send({ name: 'Ada L.' });
    expect(updated.status).toBe(200);
    const second = await arrivedAt(secret, 'customers', 'customer.updated', (d) => d.id === created.body.id);
    expect(second.payload.data).toEqual(updated.body);
    expect(second.headers['webhook-id']).not.toBe(first.headers['webhook-id']);
  });

  it('sends customer.created through GraphQL too, and nothing for a change that rolled back', async () => {
    const { apiKey, secret, endpoint } = await appWithEndpoint('graphql-customers', ['customer.created']);
    const created = await server.graphql(
      `mutation { createCustomer(input: { email: "grace@example.com" }) { id email } }`,
      {},
      apiKey,
    );
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createCustomer.id;
    await arrivedAt(secret, 'graphql-customers', 'customer.created', (d) => d.id === id);

    // The duplicate's transaction wrote its event before the unique key refused the row: both roll back.
    const duplicate = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'GRACE@example.com' });
    expect(duplicate.status).toBe(409);
    const marker = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'after@example.com' });
    await arrivedAt(secret, 'graphql-customers', 'customer.created', (d) => d.id === marker.body.id);
    const deliveries = await server.http
      .get(`/v1/webhook-endpoints/${endpoint.id}/deliveries`)
      .set(auth(apiKey));
    expect(deliveries.body.data).toHaveLength(2);
    // One parser for every `limit`: what the customers list refuses, the deliveries list refuses alike.
    for (const limit of ['0x10', '1e2', ' 5', '5 ', '-1', '0', '101', '']) {
      const customers = await server.http.get('/v1/customers').query({ limit }).set(auth(apiKey));
      const listed = await server.http
        .get(`/v1/webhook-endpoints/${endpoint.id}/deliveries`)
        .query({ limit })
        .set(auth(apiKey));
      expect({ limit, status: listed.status, message: listed.body.message }).toEqual({
        limit,
        status: 400,
        message: customers.body.message,
      });
      expect(customers.status).toBe(400);
    }
    expect(
      receiver.of('customer.created', (d) => d.email.toLowerCase() === 'grace@example.com'),
    ).toHaveLength(1);
  });

  it('sends subscription.created, entitlements.updated and customer.updated after the checkout loop through the emulator', async () => {
    const { appId, apiKey, secret } = await appWithEndpoint('checkout');
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro', features: { seats: 10 } });
    const customer = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'buyer@example.com' });
    const url = (
      await server.http.post('/v1/checkout/session').set(auth(apiKey)).send({
        planId: 'pro',
        customerId: customer.body.id,
        successUrl: 'https://shop.example.com/ok',
        cancelUrl: 'https://shop.example.com/no',
      })
    ).body.url;
    const linked = await arrivedAt(secret, 'checkout', 'customer.updated', (d) => d.id === customer.body.id);
    expect(linked.payload.data.paymentCustomerId).toMatch(/^cus_/);

    expect((await payOnHostedPage(url)).status).toBe(303);
    const created = await arrivedAt(
      secret,
      'checkout',
      'subscription.created',
      (d) => d.customerId === customer.body.id,
    );
    const current = await server.http
      .get('/v1/subscriptions/current')
      .query({ customerId: customer.body.id })
      .set(auth(apiKey));
    expect(created.payload.data).toEqual(current.body);
    expect(created.payload.data).toMatchObject({ status: 'active', plan: { id: 'pro', name: 'Pro' } });
    const entitled = await arrivedAt(
      secret,
      'checkout',
      'entitlements.updated',
      (d) => d.customerId === customer.body.id,
    );
    expect(entitled.payload.data).toEqual({
      customerId: customer.body.id,
      planName: 'Pro',
      features: { seats: 10 },
      ev: expect.any(Number),
    });
    // The entitlement version the event announces is the one the customer's next token carries.
    const token = await server.http
      .post(`/v1/apps/${appId}/auth/entitlement-token`)
      .set(auth(apiKey))
      .send({ customerId: customer.body.id });
    expect(token.status).toBe(200);
    expect(token.headers['tollgate-entitlements-version']).toBe(String(entitled.payload.data.ev));
  });

  it('sends subscription.updated, entitlements.updated and subscription.canceled for pause, resume and cancel (REST and GraphQL)', async () => {
    const { appId, apiKey, secret } = await appWithEndpoint('lifecycle');
    await createPaidPlan(server, appId, { id: 'team', name: 'Team', features: { seats: 3 } });
    const customerId = await subscribe(apiKey, 'team', 'life@example.com');
    const subscription = (
      await arrivedAt(secret, 'lifecycle', 'subscription.created', (d) => d.customerId === customerId)
    ).payload.data;
    await arrivedAt(
      secret,
      'lifecycle',
      'entitlements.updated',
      (d) => d.customerId === customerId && d.planName === 'Team',
    );

    const paused = await server.http
      .post(`/v1/subscriptions/${subscription.id}/pause`)
      .set(auth(apiKey))
      .send({});
    expect(paused.status).toBe(200);
    const pausedEvent = await arrivedAt(
      secret,
      'lifecycle',
      'subscription.updated',
      (d) => d.id === subscription.id && d.status === 'paused',
    );
    expect(pausedEvent.payload.data).toEqual(paused.body);
    // Paused grants nothing, and the app has no default plan.
    await arrivedAt(
      secret,
      'lifecycle',
      'entitlements.updated',
      (d) => d.customerId === customerId && d.planName === null,
    );

    const resumed = await server.graphql(
      `mutation($id: ID!) { resumeSubscription(id: $id) { status } }`,
      { id: subscription.id },
      apiKey,
    );
    expect(resumed.body.errors).toBeUndefined();
    await arrivedAt(
      secret,
      'lifecycle',
      'subscription.updated',
      (d) => d.id === subscription.id && d.status === 'active',
    );
    await eventually(
      () =>
        receiver.of('entitlements.updated', (d) => d.customerId === customerId && d.planName === 'Team')
          .length === 2
          ? true
          : undefined,
      { what: 'entitlements back after resume', timeoutMs: 20_000 },
    );

    const atPeriodEnd = await server.http
      .post(`/v1/subscriptions/${subscription.id}/cancel`)
      .set(auth(apiKey))
      .send({ atPeriodEnd: true });
    expect(atPeriodEnd.status).toBe(200);
    await arrivedAt(
      secret,
      'lifecycle',
      'subscription.updated',
      (d) => d.id === subscription.id && d.cancelAtPeriodEnd === true,
    );

    const canceled = await server.http
      .post(`/v1/subscriptions/${subscription.id}/cancel`)
      .set(auth(apiKey))
      .send({});
    expect(canceled.status).toBe(200);
    const canceledEvent = await arrivedAt(
      secret,
      'lifecycle',
      'subscription.canceled',
      (d) => d.id === subscription.id,
    );
    expect(canceledEvent.payload.data).toEqual(canceled.body);
    await eventually(
      () =>
        receiver.of('entitlements.updated', (d) => d.customerId === customerId && d.planName === null)
          .length === 2
          ? true
          : undefined,
      { what: 'entitlements gone after cancel', timeoutMs: 20_000 },
    );
    // Cancelling at period end changed nothing the customer is entitled to: no event for it.
    expect(receiver.of('entitlements.updated', (d) => d.customerId === customerId)).toHaveLength(4);
  });

  it('sends subscription.canceled and entitlements.updated when only a Stripe notification changes the subscription', async () => {
    const { appId, apiKey, secret } = await appWithEndpoint('provider');
    await createPaidPlan(server, appId, { id: 'solo', name: 'Solo', features: { seats: 1 } });
    const customerId = await subscribe(apiKey, 'solo', 'provider@example.com');
    const subscription = (
      await arrivedAt(secret, 'provider', 'subscription.created', (d) => d.customerId === customerId)
    ).payload.data;
    const paymentCustomerId = (await server.http.get(`/v1/customers/${customerId}`).set(auth(apiKey))).body
      .paymentCustomerId;

    // Canceled at Stripe (say, from its dashboard): Tollgate hears of it only through the notification.
    const stripe = stripeFor(server);
    const [remote] = (await stripe.subscriptions.list({ customer: paymentCustomerId })).data;
    await stripe.subscriptions.cancel(remote!.id);

    const canceled = await arrivedAt(
      secret,
      'provider',
      'subscription.canceled',
      (d) => d.id === subscription.id,
    );
    expect(canceled.payload.data).toMatchObject({ id: subscription.id, status: 'canceled' });
    await arrivedAt(
      secret,
      'provider',
      'entitlements.updated',
      (d) => d.customerId === customerId && d.planName === null,
    );
    const current = await server.http
      .get('/v1/subscriptions/current')
      .query({ customerId })
      .set(auth(apiKey));
    expect(current.status).toBe(404);
  });

  it('records the events of a notification applied by the one-statement path, and none for its duplicate', async () => {
    const { appId, apiKey, secret } = await appWithEndpoint('notified');
    await createPaidPlan(server, appId, { id: 'duo', name: 'Duo', features: { seats: 2 } });
    const customerId = await subscribe(apiKey, 'duo', 'notified@example.com');
    const subscription = (
      await arrivedAt(secret, 'notified', 'subscription.created', (d) => d.customerId === customerId)
    ).payload.data;
    const paymentCustomerId = (await server.http.get(`/v1/customers/${customerId}`).set(auth(apiKey))).body
      .paymentCustomerId;
    const stripe = stripeFor(server);
    const [remote] = (await stripe.subscriptions.list({ customer: paymentCustomerId })).data;
    // Far newer than anything the emulator sent, so the event is applied by the newer-event statement.
    const created = Math.floor(Date.now() / 1000) + 1000;
    const notify = async (id: string, at: number, status: string) => {
      const { body, signature } = signedNotification(server, {
        id,
        object: 'event',
        api_version: '2025-01-01',
        created: at,
        type: 'customer.subscription.updated',
        data: { object: { ...remote, status } },
        livemode: false,
        pending_webhooks: 1,
      });
      const res = await server.http
        .post('/v1/webhooks/stripe')
        .set('stripe-signature', signature)
        .set('content-type', 'application/json')
        .send(body);
      expect(res.status).toBe(200);
    };
    await notify('evt_notified_unpaid', created, 'unpaid');
    const unpaid = await arrivedAt(
      secret,
      'notified',
      'subscription.updated',
      (d) => d.id === subscription.id && d.status === 'unpaid',
    );
    expect(unpaid.payload.data).toEqual({ ...subscription, status: 'unpaid', updatedAt: expect.any(String) });
    await arrivedAt(
      secret,
      'notified',
      'entitlements.updated',
      (d) => d.customerId === customerId && d.planName === null,
    );

    await notify('evt_notified_unpaid', created, 'unpaid'); // a duplicate: nothing new
    await notify('evt_notified_past_due', created + 10, 'past_due');
    await arrivedAt(
      secret,
      'notified',
      'subscription.updated',
      (d) => d.id === subscription.id && d.status === 'past_due',
    );
    await eventually(() =>
      receiver.of('entitlements.updated', (d) => d.customerId === customerId && d.planName === 'Duo')
        .length === 2
        ? true
        : undefined,
    );
    expect(
      receiver.of('subscription.updated', (d) => d.id === subscription.id).map((r) => r.payload.data.status),
    ).toEqual(['unpaid', 'past_due']);
  });

  it('sends one plan.updated when the operator edits a plan, and none for creating it', async () => {
    const { appId, secret } = await appWithEndpoint('plans', ['plan.updated']);
    const upsert = (name: string) =>
      server.graphql(
        `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id name features isDefault } }`,
        { appId, input: { id: 'basic', name, features: { exports: true }, isDefault: true } },
        server.adminToken,
      );
    await upsert('Basic');
    const edited = await upsert('Basic+');
    const event = await arrivedAt(secret, 'plans', 'plan.updated', (d) => d.id === 'basic');
    expect(event.payload.data).toEqual({
      ...edited.body.data.upsertPlan,
      stripePriceId: null,
      trialDays: 0,
      seats: null,
      archived: false,
      ev: expect.any(Number),
    });
    await upsert('Basic+'); // no change, no event
    const marker = await upsert('Basic 2');
    expect(marker.body.errors).toBeUndefined();
    await eventually(() =>
      receiver.of('plan.updated', (d) => d.name === 'Basic 2').length === 1 ? true : undefined,
    );
    expect(receiver.received.filter((r) => pathOf(r) === 'plans').map((r) => r.payload.data.name)).toEqual([
      'Basic+',
      'Basic 2',
    ]);
  });

  it("delivers an app's events to its own endpoints only", async () => {
    const a = await appWithEndpoint('isolation-a');
    const b = await appWithEndpoint('isolation-b');
    const created = await server.http
      .post('/v1/customers')
      .set(auth(a.apiKey))
      .send({ email: 'only-a@example.com' });
    await arrivedAt(a.secret, 'isolation-a', 'customer.created', (d) => d.id === created.body.id);
    const markerB = await server.http
      .post('/v1/customers')
      .set(auth(b.apiKey))
      .send({ email: 'only-b@example.com' });
    await arrivedAt(b.secret, 'isolation-b', 'customer.created', (d) => d.id === markerB.body.id);
    expect(
      receiver.received.filter((r) => pathOf(r) === 'isolation-b').map((r) => r.payload.data.id),
    ).toEqual([markerB.body.id]);
  });

  it('signs with both secrets for 24 h after a rotation, so receivers holding either verify', async () => {
    const { apiKey, secret, endpoint } = await appWithEndpoint('rotation', ['customer.created']);
    const rotated = await server.http
      .post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`)
      .set(auth(apiKey));
    const created = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'rot@example.com' });
    const event = await arrivedAt(
      rotated.body.secret,
      'rotation',
      'customer.created',
      (d) => d.id === created.body.id,
    );
    expect(String(event.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(secret, event)).toEqual(event.payload);
  });
});

/** Checkout paid through the emulator for a new customer; returns the customer id. */
async function subscribe(apiKey: string, planId: string, email: string): Promise<string> {
  const customer = await server.http.post('/v1/customers').set(auth(apiKey)).send({ email });
  const session = await server.http.post('/v1/checkout/session').set(auth(apiKey)).send({
    planId,
    customerId: customer.body.id,
    successUrl: 'https://s.example.com/',
    cancelUrl: 'https://s.example.com/',
  });
  expect(session.status).toBe(200);
  expect((await payOnHostedPage(session.body.url)).status).toBe(303);
  return customer.body.id;
}

/** `arrived` for the endpoint whose URL ends in `/<tag>`. */
function arrivedAt(secret: string, tag: string, type: string, match?: (data: any) => boolean) {
  return arrived(secret, tag, type, match);
}
