import { createHmac, randomBytes } from 'node:crypto';
import {
  Tollgate,
  TollgateError,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventType,
} from '@tollgate/client';
import { WEBHOOK_EVENT_TYPES } from '../../src/modules/webhooks/webhook-event-types.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, sessionTokenFor } from '../helpers/stripe-fixtures.js';

/**
 * `Tollgate` (the API-key client of @tollgate/client, as built into packages/client/dist) against a
 * real running Tollgate: each method's answer, and TollgateError's fields for each kind of refusal.
 */
let server: TestServer;
let appId: string;
let client: Tollgate;
let billing: BillingFixtures;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp({ organizationsEnabled: true });
  appId = app.appId;
  client = new Tollgate({ apiKey: app.apiKey, baseUrl: server.url });
  billing = new BillingFixtures(server, appId);
  pro = await billing.plan({ slug: 'pro', unitAmount: 2000 });
  await createPaidPlan(server, appId, { id: 'team', name: 'Team' });
  const free = await server.graphql(
    `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
    { appId, input: { id: 'free', name: 'Free', features: { export: true, seats: 1 }, isDefault: true } },
    server.adminToken,
  );
  expect(free.body.errors).toBeUndefined();
});

afterAll(async () => {
  await server?.close();
});

const email = (label: string) => `${label}-${randomBytes(5).toString('hex')}@example.com`;

/** The TollgateError a call fails with (fails the test when it succeeds or throws something else). */
async function failure(call: Promise<unknown>): Promise<TollgateError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TollgateError)) throw new Error(`expected a TollgateError, got ${String(error)}`);
  return error;
}

describe('Tollgate (API key client)', () => {
  it('creates, lists, retrieves and updates customers, metadata merged', async () => {
    const address = email('ada');
    const created = await client.customers.create({
      email: address,
      name: 'Ada',
      metadata: { plan: 'gold', seats: 3 },
    });
    expect(created).toEqual({
      id: expect.stringMatching(/^cus_/),
      email: address,
      name: 'Ada',
      metadata: { plan: 'gold', seats: 3 },
      paymentCustomerId: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(await client.customers.retrieve(created.id)).toEqual(created);
    const page = await client.customers.list({ email: address.slice(0, 10), limit: 5 });
    expect(page.data.map((c) => c.id)).toEqual([created.id]);
    expect(page.pagination).toEqual({ total: 1, limit: 5, offset: 0 });
    const updated = await client.customers.update(created.id, {
      name: null,
      metadata: { seats: null, tier: 2 },
    });
    expect(updated.name).toBeNull();
    expect(updated.metadata).toEqual({ plan: 'gold', tier: 2 });
  });

  it('creates a checkout session whose url is the hosted payment page', async () => {
    const customer = await client.customers.create({ email: email('buyer') });
    const session = await client.checkout.createSession({
      planId: 'team',
      customerId: customer.id,
      successUrl: 'https://shop.example.com/done?session={CHECKOUT_SESSION_ID}',
      cancelUrl: 'https://shop.example.com/cancel',
      metadata: { campaign: 'spring' },
    });
    expect(session.url).toMatch(new RegExp(`^${server.payments.emulator!.url}/checkout/`));
    const page = await fetch(session.url);
    expect(page.status).toBe(200);
  });

  it('reads, lists, cancels, pauses and resumes subscriptions', async () => {
    const customer = await billing.customer();
    const owner = { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! };
    const older = await billing.subscription(owner, pro, { createdAt: new Date(Date.now() - 60_000) });
    const newer = await billing.subscription(owner, pro);
    const context = { customerId: customer.id };
    expect((await client.subscriptions.current(context)).id).toBe(newer.id);
    const canceled = await client.subscriptions.cancel(older.id, { atPeriodEnd: false });
    expect(canceled.status).toBe('canceled');
    const list = await client.subscriptions.list(context);
    expect(list.data.map((s) => [s.id, s.status])).toEqual([
      [newer.id, 'active'],
      [older.id, 'canceled'],
    ]);
    expect((await client.subscriptions.pause(newer.id)).status).toBe('paused');
    expect((await client.subscriptions.resume(newer.id)).status).toBe('active');
    const atEnd = await client.subscriptions.cancel(newer.id, { atPeriodEnd: true });
    expect(atEnd).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
  });

  it('gets and checks entitlements, lists invoices, validates coupons, lists organizations', async () => {
    const customer = await billing.customer();
    const context = { customerId: customer.id };
    expect(await client.entitlements.get(context)).toEqual({
      planName: 'Free',
      features: { export: true, seats: 1 },
    });
    expect(await client.entitlements.check('export', context)).toEqual({
      feature: 'export',
      allowed: true,
      value: true,
    });
    expect(await client.entitlements.check('sso', context)).toEqual({
      feature: 'sso',
      allowed: false,
      value: null,
    });

    await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      pro,
    );
    const invoices = await client.invoices.list(context);
    expect(invoices.data.map((i) => [i.amountPaid, i.status])).toEqual([[2000, 'paid']]);

    expect(await client.coupons.validate({ code: 'NO-SUCH-CODE', planId: 'pro' })).toEqual({
      valid: false,
      reason: 'Coupon code not found',
    });

    const organizationId = await billing.organization([{ customerId: customer.id, role: 'owner' }]);
    const organizations = await client.organizations.list({ customerId: customer.id });
    expect(organizations.data.map((o) => o.id)).toEqual([organizationId]);
    expect((await client.entitlements.get({ organizationId })).planName).toBe('Free');
    expect((await client.subscriptions.list({ organizationId })).data).toEqual([]);
  });

  it("reads an organization's seats, invites, lists and revokes invitations", async () => {
    const owner = await billing.customer();
    const organizationId = await billing.organization([{ customerId: owner.id, role: 'owner' }]);
    const invitee = email('invitee');
    const invitation = await client.organizations.invite(organizationId, {
      email: invitee,
      redirectUrl: 'http://localhost:3000/callback',
    });
    expect(invitation).toEqual({
      id: expect.stringMatching(/^inv_/),
      email: invitee,
      role: 'member',
      status: 'pending',
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
    });
    expect(await client.organizations.seats(organizationId)).toEqual({
      used: 2,
      members: 1,
      pending: 1,
      limit: null,
      quantity: null,
      overLimit: false,
    });
    expect(await client.organizations.invitations(organizationId)).toEqual({ data: [invitation] });
    expect(await client.organizations.revokeInvitation(organizationId, invitation.id)).toEqual({
      ...invitation,
      status: 'revoked',
    });
    const twice = await failure(client.organizations.revokeInvitation(organizationId, invitation.id));
    expect([twice.statusCode, twice.message]).toEqual([
      409,
      'Only a pending invitation can be revoked; this one is not',
    ]);
    expect((await client.organizations.seats(organizationId)).pending).toBe(0);
  });

  it('sends an Idempotency-Key with a POST when asked', async () => {
    const seen: (string | null)[] = [];
    const spying = new Tollgate({
      apiKey: (await server.createApp()).apiKey,
      baseUrl: server.url,
      fetch: (input, init) => {
        seen.push(new Headers(init?.headers).get('idempotency-key'));
        return fetch(input, init);
      },
    });
    const created = await spying.customers.create({ email: email('idem') }, { idempotencyKey: 'order-42' });
    expect(created.id).toMatch(/^cus_/);
    await spying.customers.create({ email: email('plain') });
    expect(seen).toEqual(['order-42', null]);
  });

  it('throws TollgateError with the envelope and rate-limit headers on 400, 401, 403, 404 and 409', async () => {
    const bad = await failure(client.customers.create({ email: 'not-an-address' }));
    expect(bad).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: 'email: must be a valid e-mail address',
    });
    expect(bad.rateLimit).toEqual({ limit: 1000, remaining: expect.any(Number), reset: expect.any(Number) });
    expect(bad.rateLimit!.reset).toBeGreaterThan(Date.now() / 1000);

    const unauthorized = await failure(
      new Tollgate({ apiKey: 'tg_sk_wrong', baseUrl: server.url }).customers.list(),
    );
    expect(unauthorized).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
    // Counted per client IP (the test server raises that budget so its files' requests never share out).
    expect(unauthorized.rateLimit?.limit).toBe(100000);

    const plain = await server.createApp();
    const plainCustomer = await new Tollgate({ apiKey: plain.apiKey, baseUrl: server.url }).customers.create({
      email: email('plain'),
    });
    const forbidden = await failure(
      new Tollgate({ apiKey: plain.apiKey, baseUrl: server.url }).organizations.list({
        customerId: plainCustomer.id,
      }),
    );
    expect(forbidden).toMatchObject({
      statusCode: 403,
      error: 'Forbidden',
      message: 'Organizations are not enabled for this app',
    });

    const missing = await failure(client.customers.retrieve('cus_missing'));
    expect(missing).toMatchObject({ statusCode: 404, error: 'Not Found' });
    expect(missing.message).toMatch(/cus_missing/);

    const address = email('dup');
    await client.customers.create({ email: address });
    const conflict = await failure(client.customers.create({ email: address.toUpperCase() }));
    expect(conflict).toMatchObject({ statusCode: 409, error: 'Conflict' });
    expect(conflict).toBeInstanceOf(Error);
  });

  it('throws a TollgateError with status 0 when Tollgate cannot be reached', async () => {
    const offline = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: 'http://127.0.0.1:9' });
    expect(await failure(offline.customers.list())).toMatchObject({ statusCode: 0, error: 'Network Error' });
  });

  it('refuses to run in a browser', () => {
    const g = globalThis as Record<string, unknown>;
    g.window = {};
    g.document = {};
    try {
      expect(() => new Tollgate({ apiKey: 'tg_sk_x', baseUrl: server.url })).toThrow(
        /refuses to run in a browser/,
      );
    } finally {
      delete g.window;
      delete g.document;
    }
  });
});

describe('verifyWebhook', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const sign = (id: string, timestamp: number, body: string) =>
    createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
      .update(`${id}.${timestamp}.${body}`)
      .digest('base64');

  it('types its answer as one event per type Tollgate records, no more and no fewer', () => {
    // Compiles only while the client's union and the API's list of types are the same set.
    const covered: Record<WebhookEvent['type'], true> & Record<WebhookEventType, true> = Object.fromEntries(
      WEBHOOK_EVENT_TYPES.map((type) => [type, true]),
    ) as Record<(typeof WEBHOOK_EVENT_TYPES)[number], true>;
    const sameSet: [WebhookEvent['type']] extends [WebhookEventType]
      ? [WebhookEventType] extends [WebhookEvent['type']]
        ? true
        : false
      : false = true;
    expect(sameSet).toBe(true);
    expect(Object.keys(covered).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
  });

  it('returns the event of a delivery signed the Standard Webhooks way, and refuses a tampered one', async () => {
    const body = JSON.stringify({ type: 'customer.created', data: { id: 'cus_1' } });
    const now = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(now),
      'webhook-signature': `v1,bm90LXRoaXM= v1,${sign('msg_1', now, body)}`,
    };
    expect(await verifyWebhook(body, headers, secret)).toEqual({
      type: 'customer.created',
      data: { id: 'cus_1' },
    });
    expect(await verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret)).toMatchObject({
      type: 'customer.created',
    });
    const tampered = await failure(verifyWebhook(body.replace('cus_1', 'cus_2'), headers, secret));
    expect(tampered).toMatchObject({ statusCode: 400, message: 'no valid webhook signature' });
    const old = now - 600;
    const stale = await failure(
      verifyWebhook(
        body,
        {
          ...headers,
          'webhook-timestamp': String(old),
          'webhook-signature': `v1,${sign('msg_1', old, body)}`,
        },
        secret,
      ),
    );
    expect(stale.message).toBe('webhook-timestamp is too far from now');
    expect((await failure(verifyWebhook(body, {}, secret))).statusCode).toBe(400);
  });
});

describe('sessions seen by the API-key client', () => {
  it('a session token is not an API key: the key-only customer list refuses it (403)', async () => {
    const customer = await client.customers.create({ email: email('sess') });
    const token = await sessionTokenFor(server, appId, customer.id);
    const asSession = new Tollgate({ apiKey: token, baseUrl: server.url });
    expect(await failure(asSession.customers.list())).toMatchObject({ statusCode: 403, error: 'Forbidden' });
  });
});
