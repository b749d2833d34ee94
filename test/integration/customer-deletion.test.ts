import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { withContext } from '../../src/db.js';
import { tokenFromDevMailbox } from '../helpers/auth-fixtures.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { wherePersonalDataRemains } from '../helpers/personal-data.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { payOnHostedPage, startServerWithUnreachableStripe } from '../helpers/stripe-fixtures.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

const logLines: Array<Record<string, unknown>> = [];
const logSink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n')) if (line.trim()) logLines.push(JSON.parse(line));
    done();
  },
});

let server: TestServer;
let appId: string;
let apiKey: string;
let billing: BillingFixtures;
let plan: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer({ env: { LOG_LEVEL: 'info' }, logDestination: logSink });
  // Several subscriptions allowed: a subscribed customer's own checkout leaves a stored answer to erase.
  ({ appId, apiKey } = await server.createApp({
    organizationsEnabled: true,
    allowMultipleSubscriptions: true,
  }));
  billing = new BillingFixtures(server, appId);
  plan = await billing.plan();
});

afterAll(async () => {
  await server?.close();
});

const auth = (token = apiKey) => ({ authorization: `Bearer ${token}` });

function sql<T>(query: string, params: unknown[] = []): Promise<T[]> {
  return withContext(server.deps.orm, () => server.deps.orm.em.execute<T[]>(query, params));
}

/** A customer made through the API with an idempotency key, so a stored answer holds its data too. */
async function customerWithPersonalData(key = apiKey) {
  const marker = randomBytes(6).toString('hex');
  const email = `erase-${marker}@example.com`;
  const name = `Ada Erasable ${marker}`;
  const metadataMarker = `meta-marker-${marker}`;
  const idempotencyKey = `signup-${email}`;
  const created = await server.http
    .post('/v1/customers')
    .set(auth(key))
    .set('idempotency-key', idempotencyKey)
    .send({ email, name, metadata: { note: metadataMarker } });
  expect(created.status).toBe(201);
  return { id: created.body.id as string, email, name, metadataMarker, key: idempotencyKey };
}

const personalDataLeft = (needles: string[]) => wherePersonalDataRemains(sql, needles);

async function total(): Promise<number> {
  const res = await server.http.get('/v1/customers').set(auth());
  expect(res.status).toBe(200);
  return res.body.pagination.total;
}

describe('DELETE /v1/customers/:id', () => {
  it('cancels at Stripe, ends sessions and links, removes memberships and leaves no personal data in any table', async () => {
    const customer = await customerWithPersonalData();
    const stripeCustomer = await billing.stripe.customers.create({ email: customer.email });
    const subscription = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: stripeCustomer.id },
      plan,
    );
    await sql('update subscription set metadata = ?::jsonb where id = ?', [
      JSON.stringify({ orderedBy: customer.email }),
      subscription.id,
    ]);
    expect((await billing.stripe.subscriptions.retrieve(subscription.stripeSubscriptionId)).status).toBe(
      'active',
    );
    const owner = await billing.customer();
    const organizationId = await billing.organization([
      { customerId: owner.id, role: 'owner' },
      { customerId: customer.id, role: 'member' },
    ]);
    const session = await billing.session(customer.id);
    const organizationSession = await billing.session(customer.id, organizationId);
    expect((await server.http.get(`/v1/apps/${appId}/auth/session`).set(auth(session))).status).toBe(200);
    const requested = await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email: customer.email, redirectUrl: 'http://localhost:3000/callback' });
    expect(requested.status).toBe(200);
    const magicToken = await tokenFromDevMailbox(server, customer.email);
    // A kept GraphQL answer that shows the customer's metadata without its id, e-mail or name.
    const selectedAlone = await server.http
      .post('/graphql')
      .set(auth())
      .set('idempotency-key', randomUUID())
      .send({
        query:
          'mutation($id: ID!) { updateCustomer(id: $id, input: { metadata: { seen: true } }) { metadata } }',
        variables: { id: customer.id },
      });
    expect(selectedAlone.body.data.updateCustomer.metadata).toEqual({
      note: customer.metadataMarker,
      seen: true,
    });
    // An answer kept under the customer's own session (a checkout: no personal data in it, but its own).
    const sessionKey = randomUUID();
    const checkout = await server.http
      .post('/v1/checkout/session')
      .set(auth(session))
      .set('idempotency-key', sessionKey)
      .send({
        customerId: customer.id,
        planId: plan.slug,
        successUrl: 'http://localhost:3000/ok',
        cancelUrl: 'http://localhost:3000/no',
      });
    expect(checkout.status).toBe(200);
    expect(await sql('select 1 from idempotency_record where key = ?', [sessionKey])).toHaveLength(1);
    const before = await total();
    const needles = [customer.email, customer.name, customer.metadataMarker];
    expect((await personalDataLeft(needles)).length).toBeGreaterThan(0);

    const res = await server.http.delete(`/v1/customers/${customer.id}`).set(auth());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: customer.id, deleted: true });

    // Canceled at Stripe, and kept here as billing history without the customer.
    expect((await billing.stripe.subscriptions.retrieve(subscription.stripeSubscriptionId)).status).toBe(
      'canceled',
    );
    const kept = await billing.stored(subscription.id);
    expect(kept.customer).toBeNull();
    expect(kept.status).toBe('canceled');
    expect(kept.stripeSubscriptionId).toBe(subscription.stripeSubscriptionId);
    expect(kept.stripeCustomerId).toBe(stripeCustomer.id);
    expect(kept.metadata).toEqual({});

    // Credentials die at once.
    for (const token of [session, organizationSession]) {
      const answer = await server.http.get(`/v1/apps/${appId}/auth/session`).set(auth(token));
      expect(answer.status).toBe(401);
    }
    const verified = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token: magicToken });
    expect(verified.status).toBe(401);

    // Gone from the app, counted exactly, and from the organization.
    expect((await server.http.get(`/v1/customers/${customer.id}`).set(auth())).status).toBe(404);
    expect(await total()).toBe(before - 1);
    const [counts] = await sql<{ kept: string; actual: string }>(
      `select (select coalesce(sum(n), 0) from customer_count where app_id = ?)::text as kept,
              (select count(*) from customer where app_id = ?)::text as actual`,
      [appId, appId],
    );
    expect(counts!.kept).toBe(counts!.actual);
    expect(await sql('select 1 from organization_member where customer_id = ?', [customer.id])).toEqual([]);
    expect(
      await sql('select 1 from organization_member where organization_id = ?', [organizationId]),
    ).toHaveLength(1);

    expect(await personalDataLeft(needles)).toEqual([]);
    // The answer kept under its session is a tombstone: credential and a digest of the key only.
    const tombstone = `erased:${createHash('sha256').update(sessionKey).digest('hex')}`;
    expect(
      await sql(
        'select fingerprint, response_body from idempotency_record where key = ? and erased_at is not null',
        [tombstone],
      ),
    ).toEqual([{ fingerprint: '', response_body: null }]);
    expect(await sql('select 1 from idempotency_record where key = ?', [sessionKey])).toEqual([]);

    // The stored answer of the sign-up is a tombstone too: the same key answers 409 without running.
    const again = await server.http
      .post('/v1/customers')
      .set(auth())
      .set('idempotency-key', customer.key)
      .send({ email: customer.email, name: customer.name, metadata: { note: customer.metadataMarker } });
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/^The customer this request concerned was deleted/);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(
      await sql('select 1 from customer where app_id = ? and email = ?', [appId, customer.email]),
    ).toEqual([]);

    expect((await server.http.delete(`/v1/customers/${customer.id}`).set(auth())).status).toBe(404);
  });

  it('answers 409 for the last owner of an organization, and changes nothing (not even at Stripe)', async () => {
    const customer = await customerWithPersonalData();
    const stripeCustomer = await billing.stripe.customers.create({ email: customer.email });
    const subscription = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: stripeCustomer.id },
      plan,
    );
    const organizationId = await billing.organization([{ customerId: customer.id, role: 'owner' }]);
    const session = await billing.session(customer.id);

    const res = await server.http.delete(`/v1/customers/${customer.id}`).set(auth());
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      statusCode: 409,
      message: `Customer ${customer.id} is the last owner of organization ${organizationId}: make another member owner first`,
      error: 'Conflict',
    });
    expect((await billing.stripe.subscriptions.retrieve(subscription.stripeSubscriptionId)).status).toBe(
      'active',
    );
    expect((await server.http.get(`/v1/customers/${customer.id}`).set(auth())).status).toBe(200);
    expect((await server.http.get(`/v1/apps/${appId}/auth/session`).set(auth(session))).status).toBe(200);
  });

  it('never fails nor leaves a membership when the customer is added to an organization meanwhile', async () => {
    const owner = await billing.customer();
    for (let i = 0; i < 5; i++) {
      const customer = await customerWithPersonalData();
      const organizationId = await billing.organization([{ customerId: owner.id, role: 'owner' }]);
      const [deleted, added] = await Promise.all([
        server.http.delete(`/v1/customers/${customer.id}`).set(auth()),
        server.graphql(
          'mutation($o: ID!, $c: ID!) { addOrganizationMember(organizationId: $o, customerId: $c, role: owner) { role } }',
          { o: organizationId, c: customer.id },
          apiKey,
        ),
      ]);
      expect(deleted.status).toBe(200);
      // Added before the deletion (then removed with it), or refused because the customer is gone.
      if (added.body.errors) expect(added.body.errors[0].extensions.statusCode).toBe(404);
      else expect(added.body.data).toEqual({ addOrganizationMember: { role: 'owner' } });
      expect(await sql('select 1 from organization_member where customer_id = ?', [customer.id])).toEqual([]);
    }
  });

  it('deletes nothing when Stripe cannot be reached to cancel: 503, and the call can be sent again', async () => {
    const down = await startServerWithUnreachableStripe();
    try {
      const app = await down.createApp();
      const fixtures = new Fixtures(down, app.appId);
      const planId = await fixtures.plan('pro', { seats: 5 });
      const customerId = await fixtures.customer();
      const subscriptionId = await fixtures.subscription({ customerId }, planId, 'active');
      const res = await down.http.delete(`/v1/customers/${customerId}`).set(auth(app.apiKey));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        statusCode: 503,
        message: 'The payment provider is unavailable, try again later',
        error: 'Service Unavailable',
      });
      expect((await down.http.get(`/v1/customers/${customerId}`).set(auth(app.apiKey))).status).toBe(200);
      const [row] = await withContext(down.deps.orm, () =>
        down.deps.orm.em.execute<{ customer_id: string | null; status: string }[]>(
          'select customer_id, status from subscription where id = ?',
          [subscriptionId],
        ),
      );
      expect(row).toEqual({ customer_id: customerId, status: 'active' });
    } finally {
      await down.close();
    }
  });

  it("answers 404 for another app's customer and 403 for a session token", async () => {
    const customer = await customerWithPersonalData();
    const other = await server.createApp();
    const foreign = await server.http.delete(`/v1/customers/${customer.id}`).set(auth(other.apiKey));
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({
      statusCode: 404,
      message: `Customer ${customer.id} not found`,
      error: 'Not Found',
    });
    const session = await billing.session(customer.id);
    const forbidden = await server.http.delete(`/v1/customers/${customer.id}`).set(auth(session));
    expect(forbidden.status).toBe(403);
    const anonymous = await server.http.delete(`/v1/customers/${customer.id}`);
    expect(anonymous.status).toBe(401);
    expect((await server.http.get(`/v1/customers/${customer.id}`).set(auth())).status).toBe(200);
  });
});

describe('a checkout paid after its customer was deleted', () => {
  it('is acknowledged with 2xx, its subscription canceled at Stripe, and nothing of the customer recreated', async () => {
    const customer = await customerWithPersonalData();
    const started = await server.http.post('/v1/checkout/session').set(auth()).send({
      customerId: customer.id,
      planId: plan.slug,
      successUrl: 'http://localhost:3000/ok',
      cancelUrl: 'http://localhost:3000/no',
    });
    expect(started.status).toBe(200);
    const sessionId = String(started.body.url).split('/').pop()!;

    const deleted = await server.http.delete(`/v1/customers/${customer.id}`).set(auth());
    expect(deleted.status).toBe(200);

    expect((await payOnHostedPage(started.body.url)).status).toBe(303);
    const paid = await billing.stripe.checkout.sessions.retrieve(sessionId);
    expect(paid.status).toBe('complete');
    const stripeSubscriptionId = String(paid.subscription);
    const emulator = server.payments.emulator!;
    const completed = emulator.events.find(
      (e) => e.type === 'checkout.session.completed' && e.data.object.id === sessionId,
    )!;
    const created = emulator.events.find(
      (e) => e.type === 'customer.subscription.created' && e.data.object.id === stripeSubscriptionId,
    )!;
    expect(completed).toBeDefined();
    expect(created).toBeDefined();

    // Both notifications recorded as processed, each delivered once and answered 200: Stripe stops.
    await eventually(async () => {
      const rows = await sql<{ id: string }>('select id from processed_event where id in (?, ?)', [
        completed.id,
        created.id,
      ]);
      return rows.length === 2 ? rows : undefined;
    });
    const deliveries = await eventually(async () => {
      const found = emulator.deliveries.filter((d) => d.eventId === completed.id || d.eventId === created.id);
      return found.length === 2 ? found : undefined;
    });
    expect(deliveries.map((d) => d.status)).toEqual([200, 200]);

    // Canceled at Stripe, so the deleted person is never billed; Stripe's own notification of that
    // cancellation is acknowledged too.
    expect((await billing.stripe.subscriptions.retrieve(stripeSubscriptionId)).status).toBe('canceled');
    const deletedEvent = await eventually(async () =>
      emulator.events.find(
        (e) => e.type === 'customer.subscription.deleted' && e.data.object.id === stripeSubscriptionId,
      ),
    );
    await eventually(async () =>
      (await sql('select 1 from processed_event where id = ?', [deletedEvent.id])).length === 1
        ? true
        : undefined,
    );
    // The emulator notes a delivery when the answer reaches it, which can be just after the commit.
    const deletedDeliveries = await eventually(async () => {
      const found = emulator.deliveries.filter((d) => d.eventId === deletedEvent.id);
      return found.length > 0 ? found : undefined;
    });
    expect(deletedDeliveries.map((d) => d.status)).toEqual([200]);

    // The operator is told once, at warn level, what was done and why; the log names no personal data.
    const warned = logLines.filter(
      (line) => line.level === 40 && line.stripeSubscriptionId === stripeSubscriptionId,
    );
    expect(warned.length).toBeGreaterThanOrEqual(1);
    for (const line of warned) {
      expect(line).toMatchObject({
        customerId: customer.id,
        appId,
        canceledAtStripe: true,
        msg: 'stripe notification: checkout paid after its customer was deleted; subscription canceled at Stripe, not imported',
      });
    }
    const logged = JSON.stringify(logLines);
    expect(logged).not.toContain(customer.email);
    expect(logged).not.toContain(customer.name);

    // Nothing of the customer came back: no row, no subscription, no personal data anywhere.
    expect(await sql('select 1 from customer where id = ?', [customer.id])).toEqual([]);
    expect(await sql('select 1 from customer where email_lower = ?', [customer.email.toLowerCase()])).toEqual(
      [],
    );
    expect((await server.http.get(`/v1/customers/${customer.id}`).set(auth())).status).toBe(404);
    expect(
      await sql('select 1 from subscription where stripe_subscription_id = ?', [stripeSubscriptionId]),
    ).toEqual([]);
    expect(await personalDataLeft([customer.email, customer.name, customer.metadataMarker])).toEqual([]);
  });
});

describe('customer.deleted and stored webhook payloads', () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await receiver.close();
  });

  it("tells the app's endpoint with { id } and erases the payloads that named the customer", async () => {
    // An app of its own: its endpoint must not see the other tests' customers.
    const own = await server.createApp();
    const ownBilling = new BillingFixtures(server, own.appId);
    const ownPlan = await ownBilling.plan();
    const endpoint = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(own.apiKey))
      .send({ url: `${receiver.url}/erasure` });
    expect(endpoint.status).toBe(201);
    const secret = endpoint.body.secret as string;
    const customer = await customerWithPersonalData(own.apiKey);
    const stripeCustomer = await ownBilling.stripe.customers.create({ email: customer.email });
    const subscription = await ownBilling.subscription(
      { customerId: customer.id, stripeCustomerId: stripeCustomer.id },
      ownPlan,
    );
    const ofCustomer = (type: string) =>
      receiver.received.find(
        (r) => r.path === '/erasure' && r.payload.type === type && r.payload.data.id === customer.id,
      );
    const created = await eventually(() => ofCustomer('customer.created'), { what: 'customer.created' });
    expect(created.payload.data.email).toBe(customer.email);
    const stored = await sql<{ n: string }>(
      'select count(*) as n from webhook_event where strpos(body, ?) > 0',
      [customer.email],
    );
    expect(stored).toEqual([{ n: '1' }]);

    const res = await server.http.delete(`/v1/customers/${customer.id}`).set(auth(own.apiKey));
    expect(res.status).toBe(200);

    const deleted = await eventually(() => ofCustomer('customer.deleted'), { what: 'customer.deleted' });
    expect(verify(secret, deleted)).toEqual(deleted.payload);
    expect(deleted.payload.data).toEqual({ id: customer.id });
    expect(deleted.headers['webhook-id']).toMatch(/^msg_/);
    // Recorded, and the only stored event left that names the customer.
    const naming = await sql<{ type: string }>(
      'select type from webhook_event where app_id = ? and strpos(body, ?) > 0',
      [own.appId, customer.id],
    );
    expect(naming).toEqual([{ type: 'customer.deleted' }]);
    expect((await ownBilling.stripe.subscriptions.retrieve(subscription.stripeSubscriptionId)).status).toBe(
      'canceled',
    );
    expect(await personalDataLeft([customer.email, customer.name, customer.metadataMarker])).toEqual([]);
  });
});

describe('GraphQL deleteCustomer', () => {
  it('deletes through the same core', async () => {
    const customer = await customerWithPersonalData();
    const res = await server.graphql(
      'mutation($id: ID!) { deleteCustomer(id: $id) { id deleted } }',
      { id: customer.id },
      apiKey,
    );
    expect(res.body).toEqual({ data: { deleteCustomer: { id: customer.id, deleted: true } } });
    expect((await server.http.get(`/v1/customers/${customer.id}`).set(auth())).status).toBe(404);
    const missing = await server.graphql(
      'mutation($id: ID!) { deleteCustomer(id: $id) { id } }',
      { id: customer.id },
      apiKey,
    );
    expect(missing.body.errors?.[0].extensions).toEqual({ code: 'NOT_FOUND', statusCode: 404 });
  });

  it('is idempotent with the header: a repeat replays the deletion instead of answering 404', async () => {
    const customer = await customerWithPersonalData();
    const key = randomUUID();
    const send = () =>
      server.http
        .post('/graphql')
        .set(auth())
        .set('idempotency-key', key)
        .send({
          query: 'mutation($id: ID!) { deleteCustomer(id: $id) { id deleted } }',
          variables: { id: customer.id },
        });
    const first = await send();
    const again = await send();
    expect(first.body).toEqual({ data: { deleteCustomer: { id: customer.id, deleted: true } } });
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});
