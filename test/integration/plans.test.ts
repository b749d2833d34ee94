import { startTestServer, type TestServer } from '../helpers/server.js';
import { sessionTokenFor, stripeFor } from '../helpers/stripe-fixtures.js';

/** Plans over GraphQL: `upsertPlan` for the operator, `plans` for the operator, API keys and sessions. */

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const UPSERT = `mutation($appId: ID!, $input: PlanInput!) {
  upsertPlan(appId: $appId, input: $input) { id name stripePriceId trialDays features isDefault }
}`;
const PLANS =
  'query($appId: ID) { plans(appId: $appId) { id name stripePriceId trialDays features isDefault } }';

/** A price at the test server's emulator (a plan's price is checked there when it is saved). */
async function price(
  recurring: { interval: 'month'; usage_type?: 'licensed' | 'metered' } | null = {
    interval: 'month',
  },
  active = true,
) {
  const created = await stripeFor(server).prices.create({
    product_data: { name: 'Plan price' },
    currency: 'usd',
    unit_amount: 1500,
    ...(recurring ? { recurring } : {}),
    active,
  });
  return created.id;
}

function upsert(appId: string, input: Record<string, unknown>, token = server.adminToken) {
  return server.graphql(UPSERT, { appId, input }, token);
}

describe('plans', () => {
  it('creates a plan, then changes only the fields sent', async () => {
    const { appId } = await server.createApp();
    const priceId = await price();
    const created = await upsert(appId, {
      id: 'pro',
      name: 'Pro',
      stripePriceId: priceId,
      trialDays: 14,
      features: { projects: 10, sso: true, support: 'email' },
    });
    expect(created.body).toEqual({
      data: {
        upsertPlan: {
          id: 'pro',
          name: 'Pro',
          stripePriceId: priceId,
          trialDays: 14,
          features: { projects: 10, sso: true, support: 'email' },
          isDefault: false,
        },
      },
    });
    const renamed = await upsert(appId, { id: 'pro', name: 'Pro plus' });
    expect(renamed.body.data.upsertPlan).toMatchObject({
      name: 'Pro plus',
      stripePriceId: priceId,
      trialDays: 14,
    });
    const cleared = await upsert(appId, { id: 'pro', name: 'Pro plus', stripePriceId: null });
    expect(cleared.body.data.upsertPlan.stripePriceId).toBeNull();
  });

  it('keeps at most one default plan per app', async () => {
    const { appId } = await server.createApp();
    await upsert(appId, { id: 'free', name: 'Free', isDefault: true });
    await upsert(appId, { id: 'starter', name: 'Starter', isDefault: true });
    const other = await server.createApp();
    await upsert(other.appId, { id: 'free', name: 'Free', isDefault: true });
    const plans = await server.graphql(PLANS, { appId }, server.adminToken);
    expect(plans.body.data.plans.map((p: { id: string; isDefault: boolean }) => [p.id, p.isDefault])).toEqual(
      [
        ['free', false],
        ['starter', true],
      ],
    );
    const theirs = await server.graphql(PLANS, { appId: other.appId }, server.adminToken);
    expect(theirs.body.data.plans.map((p: { isDefault: boolean }) => p.isDefault)).toEqual([true]);
  });

  it('validates the input and names the fields', async () => {
    const { appId } = await server.createApp();
    const res = await upsert(appId, { id: 'Pro Plan', name: ' ', trialDays: -1, features: { x: [1] } });
    expect(res.body.errors![0].extensions).toEqual({
      code: 'BAD_USER_INPUT',
      statusCode: 400,
      fields: ['id', 'name', 'trialDays', 'features.x'],
    });
    expect(res.body.errors![0].message).toContain('id: must be 1 to 63 lowercase letters');
    expect(res.body.errors![0].message).toContain('name: must not be empty');
    expect(res.body.errors![0].message).toContain('trialDays: must not be negative');
    expect(res.body.errors![0].message).toContain('features.x');
    const missing = await upsert('app_missing', { id: 'pro', name: 'Pro' });
    expect(missing.body.errors![0]).toMatchObject({
      message: 'App app_missing not found',
      extensions: { code: 'NOT_FOUND' },
    });
  });

  it('refuses a Stripe price that checkout cannot sell, naming stripePriceId, and keeps the plan as it was', async () => {
    const { appId } = await server.createApp();
    const sellable = await price();
    await upsert(appId, { id: 'pro', name: 'Pro', stripePriceId: sellable });
    const cases: Array<[string, string]> = [
      ['price_doesnotexist', 'stripePriceId: no such price at the payment provider: price_doesnotexist'],
      [
        await price({ interval: 'month', usage_type: 'metered' }),
        'is metered (usage_type=metered): a plan needs a licensed recurring price',
      ],
      [await price(null), 'is not recurring: a plan needs a recurring price'],
      [await price({ interval: 'month' }, false), 'is not active at the payment provider'],
    ];
    for (const [index, [priceId, problem]] of cases.entries()) {
      const res = await upsert(appId, { id: 'pro', name: 'Pro', stripePriceId: priceId });
      const message = problem.startsWith('stripePriceId:')
        ? problem
        : `stripePriceId: price ${priceId} ${problem}`;
      expect(res.body).toEqual({
        data: null,
        errors: [
          expect.objectContaining({
            message,
            extensions: { code: 'BAD_USER_INPUT', statusCode: 400, fields: ['stripePriceId'] },
          }),
        ],
      });
      const fresh = await upsert(appId, { id: `new-${index}`, name: 'New', stripePriceId: priceId });
      expect(fresh.body.errors![0].message).toBe(message);
    }
    const plans = await server.graphql(PLANS, { appId }, server.adminToken);
    expect(plans.body.data.plans).toEqual([
      { id: 'pro', name: 'Pro', stripePriceId: sellable, trialDays: 0, features: {}, isDefault: false },
    ]);
  });

  it('lets only the admin token upsert plans', async () => {
    const { appId, apiKey } = await server.createApp();
    const byKey = await upsert(appId, { id: 'pro', name: 'Pro' }, apiKey);
    expect(byKey.body.errors![0].extensions).toEqual({ code: 'FORBIDDEN', statusCode: 403 });
    const anonymous = await server.graphql(UPSERT, { appId, input: { id: 'pro', name: 'Pro' } });
    expect(anonymous.body.errors![0].extensions).toEqual({ code: 'UNAUTHENTICATED', statusCode: 401 });
  });

  it("lists an app's plans for its API key and customer sessions, never another app's", async () => {
    const { appId, apiKey } = await server.createApp();
    await upsert(appId, { id: 'free', name: 'Free', isDefault: true, features: { projects: 1 } });
    await upsert(appId, { id: 'pro', name: 'Pro', stripePriceId: await price(), features: { projects: 10 } });
    const byKey = await server.graphql('{ plans { id } }', {}, apiKey);
    expect(byKey.body).toEqual({ data: { plans: [{ id: 'free' }, { id: 'pro' }] } });

    const customer = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'p@example.com' });
    const token = await sessionTokenFor(server, appId, customer.body.id);
    const bySession = await server.graphql('{ plans { id name } }', {}, token);
    expect(bySession.body.data.plans).toEqual([
      { id: 'free', name: 'Free' },
      { id: 'pro', name: 'Pro' },
    ]);

    const other = await server.createApp();
    const foreign = await server.graphql(PLANS, { appId: other.appId }, apiKey);
    expect(foreign.body.errors![0]).toMatchObject({
      message: `App ${other.appId} not found`,
      extensions: { code: 'NOT_FOUND' },
    });
    const adminWithoutApp = await server.graphql('{ plans { id } }', {}, server.adminToken);
    expect(adminWithoutApp.body.errors![0]).toMatchObject({
      message: 'appId: is required for the admin token',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});
