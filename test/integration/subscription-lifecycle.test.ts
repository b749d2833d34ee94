import type { Response } from 'supertest';
import { withContext } from '../../src/db.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startServerWithUnreachableStripe } from '../helpers/stripe-fixtures.js';

let server: TestServer;
let apiKey: string;
let billing: BillingFixtures;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp({ organizationsEnabled: true });
  apiKey = app.apiKey;
  billing = new BillingFixtures(server, app.appId);
  pro = await billing.plan({ slug: 'pro' });
});

afterAll(async () => {
  await server?.close();
});

type Action = 'cancel' | 'pause' | 'resume';

async function act(
  action: Action,
  id: string,
  token: string | null = apiKey,
  body?: unknown,
): Promise<Response> {
  const req = server.http.post(`/v1/subscriptions/${id}/${action}`);
  if (token !== null) req.set('authorization', `Bearer ${token}`);
  const res = body === undefined ? await req : await req.send(body as object);
  return res;
}

/** A customer with a paid subscription to `pro` (trialing when `trialDays` is given). */
async function subscribed(options: { trialDays?: number } = {}) {
  const customer = await billing.customer();
  const subscription = await billing.subscription(
    { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
    pro,
    options,
  );
  return { customer, ...subscription };
}

const remote = (stripeSubscriptionId: string) => billing.stripe.subscriptions.retrieve(stripeSubscriptionId);

async function current(customerId: string) {
  return server.http
    .get(`/v1/subscriptions/current?customerId=${customerId}`)
    .set('authorization', `Bearer ${apiKey}`);
}

describe('POST /v1/subscriptions/:id/cancel', () => {
  it('cancels at Stripe, then stores and answers the canceled subscription', async () => {
    const { customer, id, stripeSubscriptionId } = await subscribed();
    const before = await billing.stored(id);
    const res = await act('cancel', id);
    const atStripe = await remote(stripeSubscriptionId);
    expect(atStripe.status).toBe('canceled');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id,
      customerId: customer.id,
      organizationId: null,
      plan: { id: 'pro', name: 'PRO' },
      status: 'canceled',
      currentPeriodEnd: new Date(atStripe.items.data[0]!.current_period_end * 1000).toISOString(),
      cancelAtPeriodEnd: false,
      trialEnd: null,
      canceledAt: new Date(atStripe.canceled_at! * 1000).toISOString(),
      metadata: {},
      createdAt: before.createdAt.toISOString(),
      updatedAt: expect.any(String),
    });
    const stored = await billing.stored(id);
    expect(stored.status).toBe('canceled');
    expect(stored.canceledAt?.toISOString()).toBe(res.body.canceledAt);
    expect((await current(customer.id)).status).toBe(404);
  });

  it('with atPeriodEnd keeps the subscription active and current until the period ends', async () => {
    const { customer, id, stripeSubscriptionId } = await subscribed();
    const res = await act('cancel', id, apiKey, { atPeriodEnd: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'active', cancelAtPeriodEnd: true });
    expect((await remote(stripeSubscriptionId)).cancel_at_period_end).toBe(true);
    const now = await current(customer.id);
    expect(now.status).toBe(200);
    expect(now.body).toMatchObject({ id, status: 'active', cancelAtPeriodEnd: true });
  });

  it('answers 409 when the subscription is already canceled or already scheduled, and leaves Stripe alone', async () => {
    const scheduled = await subscribed();
    await act('cancel', scheduled.id, apiKey, { atPeriodEnd: true });
    const again = await act('cancel', scheduled.id, apiKey, { atPeriodEnd: true });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      statusCode: 409,
      message: 'The subscription is already scheduled to cancel at the end of its period',
      error: 'Conflict',
    });

    const canceled = await subscribed();
    await act('cancel', canceled.id);
    const twice = await act('cancel', canceled.id);
    expect(twice.status).toBe(409);
    expect(twice.body.message).toBe('The subscription is canceled: it can no longer be changed');
    expect((await billing.stored(canceled.id)).status).toBe('canceled');
  });

  it('refuses an atPeriodEnd that is not a boolean, and unknown fields, with 400', async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    const bad = await act('cancel', id, apiKey, { atPeriodEnd: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('atPeriodEnd: Invalid input: expected boolean, received string');
    const unknown = await act('cancel', id, apiKey, { when: 'now' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toBe('unknown field: when');
    expect((await remote(stripeSubscriptionId)).status).toBe('active');
  });
});

describe('POST /v1/subscriptions/:id/pause and /resume', () => {
  it('pauses collection at Stripe: paused, no longer current, no entitlements; resume brings it back', async () => {
    const { customer, id, stripeSubscriptionId } = await subscribed();
    const paused = await act('pause', id);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id, status: 'paused', cancelAtPeriodEnd: false });
    expect((await remote(stripeSubscriptionId)).pause_collection).toEqual({
      behavior: 'void',
      resumes_at: null,
    });
    expect((await current(customer.id)).status).toBe(404);
    const entitlements = await server.http
      .get(`/v1/entitlements?customerId=${customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(entitlements.body).toEqual({ planName: null, features: {} });

    const resumed = await act('resume', id);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ id, status: 'active', cancelAtPeriodEnd: false });
    expect((await remote(stripeSubscriptionId)).pause_collection).toBeNull();
    expect((await current(customer.id)).body).toMatchObject({ id, status: 'active' });
  });

  it('resumes a paused trial back to trialing', async () => {
    const { id } = await subscribed({ trialDays: 14 });
    expect((await act('pause', id)).body.status).toBe('paused');
    const resumed = await act('resume', id);
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe('trialing');
    expect(resumed.body.trialEnd).not.toBeNull();
  });

  it('withdraws a cancellation scheduled for the period end on resume', async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    await act('cancel', id, apiKey, { atPeriodEnd: true });
    const resumed = await act('resume', id);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'active', cancelAtPeriodEnd: false, canceledAt: null });
    expect((await remote(stripeSubscriptionId)).cancel_at_period_end).toBe(false);
  });

  it('answers 409 for transitions that do not apply', async () => {
    const { id } = await subscribed();
    const resumeActive = await act('resume', id);
    expect(resumeActive.status).toBe(409);
    expect(resumeActive.body.message).toBe(
      'A subscription that is active and not scheduled to cancel cannot be resumed',
    );
    await act('pause', id);
    const pauseTwice = await act('pause', id);
    expect(pauseTwice.status).toBe(409);
    expect(pauseTwice.body.message).toBe('The subscription is already paused');
    await act('cancel', id);
    for (const action of ['pause', 'resume'] as const) {
      const res = await act(action, id);
      expect(res.status).toBe(409);
      expect(res.body.message).toBe('The subscription is canceled: it can no longer be changed');
    }
  });

  it('judges concurrent changes one after the other: two pauses at once give one 200 and one 409', async () => {
    const { id } = await subscribed();
    const statuses = (await Promise.all([act('pause', id), act('pause', id)])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409]);
    expect((await billing.stored(id)).status).toBe('paused');
  });

  it('refuses options on pause and resume with 400', async () => {
    const { id } = await subscribed();
    const res = await act('pause', id, apiKey, { behavior: 'void' });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('unknown field: behavior');
  });

  it("keeps the state when Stripe's notification for each change arrives afterwards", async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    const emulator = server.payments.emulator!;
    const updates = () =>
      emulator.events.filter(
        (e) => e.type === 'customer.subscription.updated' && e.data.object.id === stripeSubscriptionId,
      );
    /** Waits until Tollgate has accepted (2xx) the notification of the latest change. */
    const notified = async (count: number) => {
      const events = updates();
      expect(events).toHaveLength(count);
      const latest = events.at(-1)!;
      await eventually(async () =>
        emulator.deliveries.some((d) => d.eventId === latest.id && d.status === 200) ? true : undefined,
      );
    };
    for (const [step, action, status] of [
      [1, 'pause', 'paused'],
      [2, 'resume', 'active'],
      [3, 'cancel', 'canceled'],
    ] as const) {
      expect((await act(action, id)).body.status).toBe(status);
      if (action === 'cancel') {
        const deleted = await eventually(async () =>
          emulator.events.find(
            (e) => e.type === 'customer.subscription.deleted' && e.data.object.id === stripeSubscriptionId,
          ),
        );
        await eventually(async () =>
          emulator.deliveries.some((d) => d.eventId === deleted.id && d.status === 200) ? true : undefined,
        );
      } else {
        await notified(step);
      }
      expect((await billing.stored(id)).status).toBe(status);
    }
  });
});

describe('who may change a subscription', () => {
  it('answers 404 for an unknown id and for another app’s subscription', async () => {
    const { id } = await subscribed();
    expect((await act('pause', 'sub_doesnotexist')).status).toBe(404);
    const other = await server.createApp();
    const res = await act('pause', id, other.apiKey);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      statusCode: 404,
      message: `Subscription ${id} not found`,
      error: 'Not Found',
    });
    expect((await billing.stored(id)).status).toBe('active');
  });

  it('answers 401 without a credential', async () => {
    const { id } = await subscribed();
    expect((await act('cancel', id, null)).status).toBe(401);
  });

  it("lets a customer session change its own subscription, and answers 404 for another customer's", async () => {
    const mine = await subscribed();
    const theirs = await subscribed();
    const token = await billing.session(mine.customer.id);
    expect((await act('pause', mine.id, token)).status).toBe(200);
    const res = await act('pause', theirs.id, token);
    expect(res.status).toBe(404);
    expect((await billing.stored(theirs.id)).status).toBe('active');
  });

  it("lets an organization's owner and admin change its subscription; a member gets 403, an outsider 404", async () => {
    const owner = await billing.customer();
    const admin = await billing.customer({ linked: false });
    const member = await billing.customer({ linked: false });
    const outsider = await billing.customer({ linked: false });
    const organizationId = await billing.organization([
      { customerId: owner.id, role: 'owner' },
      { customerId: admin.id, role: 'admin' },
      { customerId: member.id, role: 'member' },
    ]);
    const { id } = await billing.subscription(
      { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId!, organizationId },
      pro,
    );

    const forbidden = await act('pause', id, await billing.session(member.id, organizationId));
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({
      statusCode: 403,
      message: "Only an owner or admin of the organization can change the organization's subscription",
      error: 'Forbidden',
    });
    expect((await act('pause', id, await billing.session(outsider.id))).status).toBe(404);
    expect((await billing.stored(id)).status).toBe('active');

    expect((await act('pause', id, await billing.session(admin.id, organizationId))).status).toBe(200);
    expect((await act('resume', id, await billing.session(owner.id, organizationId))).status).toBe(200);
    expect((await act('cancel', id, apiKey, { atPeriodEnd: true })).body).toMatchObject({
      organizationId,
      customerId: null,
      status: 'active',
      cancelAtPeriodEnd: true,
    });
  });
});

describe('GET /v1/subscriptions/current across transitions', () => {
  it("follows the organization's subscription for a session switched to it", async () => {
    const owner = await billing.customer();
    const organizationId = await billing.organization([{ customerId: owner.id, role: 'owner' }]);
    const { id } = await billing.subscription(
      { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId!, organizationId },
      pro,
    );
    const token = await billing.session(owner.id, organizationId);
    const currentOf = () =>
      server.http.get('/v1/subscriptions/current').set('authorization', `Bearer ${token}`);
    expect((await currentOf()).body).toMatchObject({ id, organizationId, status: 'active' });
    // The customer's own context has no subscription: the organization's is not the customer's.
    const personal = await billing.session(owner.id);
    expect(
      (await server.http.get('/v1/subscriptions/current').set('authorization', `Bearer ${personal}`)).status,
    ).toBe(404);

    await act('pause', id, token);
    expect((await currentOf()).status).toBe(404);
    await act('resume', id, token);
    expect((await currentOf()).body).toMatchObject({ id, status: 'active' });
    await act('cancel', id, token, { atPeriodEnd: true });
    expect((await currentOf()).body).toMatchObject({ id, status: 'active', cancelAtPeriodEnd: true });
    await act('cancel', id, token);
    expect((await currentOf()).status).toBe(404);
  });
});

describe('changes while Stripe is unreachable', () => {
  let offline: TestServer;

  beforeAll(async () => {
    offline = await startServerWithUnreachableStripe();
  });

  afterAll(async () => {
    await offline?.close();
  });

  it('answer 503 and store nothing', async () => {
    const app = await offline.createApp();
    const fixtures = new Fixtures(offline, app.appId);
    const planId = await fixtures.plan('pro', { seats: 5 });
    const customerId = await fixtures.customer();
    const id = await fixtures.subscription({ customerId }, planId, 'active');
    const res = await offline.http
      .post(`/v1/subscriptions/${id}/pause`)
      .set('authorization', `Bearer ${app.apiKey}`);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      statusCode: 503,
      message: 'The payment provider is unavailable, try again later',
      error: 'Service Unavailable',
    });
    const stored = await withContext(offline.deps.orm, () =>
      offline.deps.orm.em.findOneOrFail(Subscription, id),
    );
    expect(stored.status).toBe('active');
  });
});

describe('cancelSubscription, pauseSubscription, resumeSubscription (GraphQL)', () => {
  const FIELDS = 'id status cancelAtPeriodEnd canceledAt plan { id name }';

  it('apply the same transitions as REST', async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    const pause = await server.graphql(
      `mutation($id: ID!) { pauseSubscription(id: $id) { ${FIELDS} } }`,
      { id },
      apiKey,
    );
    expect(pause.body).toEqual({
      data: {
        pauseSubscription: {
          id,
          status: 'paused',
          cancelAtPeriodEnd: false,
          canceledAt: null,
          plan: { id: 'pro', name: 'PRO' },
        },
      },
    });
    const resume = await server.graphql(
      `mutation($id: ID!) { resumeSubscription(id: $id) { status } }`,
      { id },
      apiKey,
    );
    expect(resume.body).toEqual({ data: { resumeSubscription: { status: 'active' } } });
    const scheduled = await server.graphql(
      `mutation($id: ID!) { cancelSubscription(id: $id, atPeriodEnd: true) { status cancelAtPeriodEnd } }`,
      { id },
      apiKey,
    );
    expect(scheduled.body).toEqual({
      data: { cancelSubscription: { status: 'active', cancelAtPeriodEnd: true } },
    });
    const canceled = await server.graphql(
      `mutation($id: ID!) { cancelSubscription(id: $id) { status } }`,
      { id },
      apiKey,
    );
    expect(canceled.body).toEqual({ data: { cancelSubscription: { status: 'canceled' } } });
    expect((await remote(stripeSubscriptionId)).status).toBe('canceled');
  });

  it('report 409, 403 and 404 with the same codes as REST', async () => {
    const { id } = await subscribed();
    const conflict = await server.graphql(
      `mutation($id: ID!) { resumeSubscription(id: $id) { status } }`,
      { id },
      apiKey,
    );
    expect(conflict.body.errors?.[0]).toMatchObject({
      message: 'A subscription that is active and not scheduled to cancel cannot be resumed',
      extensions: { code: 'CONFLICT', statusCode: 409 },
    });

    const owner = await billing.customer();
    const member = await billing.customer({ linked: false });
    const organizationId = await billing.organization([
      { customerId: owner.id, role: 'owner' },
      { customerId: member.id, role: 'member' },
    ]);
    const org = await billing.subscription(
      { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId!, organizationId },
      pro,
    );
    const token = await billing.session(member.id, organizationId);
    const forbidden = await server.graphql(
      `mutation($id: ID!) { cancelSubscription(id: $id) { status } }`,
      { id: org.id },
      token,
    );
    expect(forbidden.body.errors?.[0].extensions).toMatchObject({ code: 'FORBIDDEN', statusCode: 403 });
    const missing = await server.graphql(
      `mutation($id: ID!) { pauseSubscription(id: $id) { status } }`,
      { id },
      token,
    );
    expect(missing.body.errors?.[0].extensions).toMatchObject({ code: 'NOT_FOUND', statusCode: 404 });
  });
});
