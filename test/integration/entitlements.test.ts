import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

async function newApp(settings: Record<string, unknown> = {}) {
  const { appId, apiKey } = await server.createApp(settings);
  return { appId, apiKey, fx: new Fixtures(server, appId) };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A REST GET (its answer is checked against schema/openapi.yaml by `server.http`). */
async function get(path: string, token?: string) {
  const req = server.http.get(path);
  if (token) req.set(bearer(token));
  return req;
}

describe('GET /v1/entitlements', () => {
  it('answers {planName: null, features: {}} with neither subscription nor default plan', async () => {
    const { apiKey, fx } = await newApp();
    const customerId = await fx.customer();
    const res = await get(`/v1/entitlements?customerId=${customerId}`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ planName: null, features: {} });
  });

  it("falls back to the app's default plan without an entitling subscription", async () => {
    const { apiKey, fx } = await newApp();
    await fx.plan('free', { projects: 1, export: false }, { isDefault: true });
    const customerId = await fx.customer();
    const res = await get(`/v1/entitlements?customerId=${customerId}`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ planName: 'Free', features: { projects: 1, export: false } });
  });

  it.each(['trialing', 'active', 'past_due'] as const)(
    'grants the plan of a %s subscription',
    async (status) => {
      const { apiKey, fx } = await newApp();
      await fx.plan('free', { projects: 1 }, { isDefault: true });
      const pro = await fx.plan('pro', { projects: 50, sso: true });
      const customerId = await fx.customer();
      await fx.subscription({ customerId }, pro, status);
      const res = await get(`/v1/entitlements?customerId=${customerId}`, apiKey);
      expect(res.body).toEqual({ planName: 'Pro', features: { projects: 50, sso: true } });
    },
  );

  it.each(['incomplete', 'incomplete_expired', 'canceled', 'unpaid', 'paused'] as const)(
    'does not grant the plan of a %s subscription',
    async (status) => {
      const { apiKey, fx } = await newApp();
      await fx.plan('free', { projects: 1 }, { isDefault: true });
      const pro = await fx.plan('pro', { projects: 50 });
      const customerId = await fx.customer();
      await fx.subscription({ customerId }, pro, status);
      const res = await get(`/v1/entitlements?customerId=${customerId}`, apiKey);
      expect(res.body).toEqual({ planName: 'Free', features: { projects: 1 } });
    },
  );

  it('uses the newest entitling subscription when there are several', async () => {
    const { apiKey, fx } = await newApp();
    const pro = await fx.plan('pro', { seats: 5 });
    const team = await fx.plan('team', { seats: 20 });
    const customerId = await fx.customer();
    await fx.subscription({ customerId }, team, 'active', new Date('2026-01-01T00:00:00Z'));
    await fx.subscription({ customerId }, pro, 'active', new Date('2026-02-01T00:00:00Z'));
    await fx.subscription({ customerId }, team, 'canceled', new Date('2026-03-01T00:00:00Z'));
    const res = await get(`/v1/entitlements?customerId=${customerId}`, apiKey);
    expect(res.body).toEqual({ planName: 'Pro', features: { seats: 5 } });
  });

  it("uses the session's own customer context with a session token", async () => {
    const { fx } = await newApp();
    const pro = await fx.plan('pro', { sso: true });
    const customerId = await fx.customer();
    await fx.subscription({ customerId }, pro, 'active');
    const token = await fx.session(customerId);
    const res = await get('/v1/entitlements', token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ planName: 'Pro', features: { sso: true } });
  });

  it('answers 400 when a session token also names a context', async () => {
    const { fx } = await newApp();
    const customerId = await fx.customer();
    const token = await fx.session(customerId);
    const res = await get(`/v1/entitlements?customerId=${customerId}`, token);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      statusCode: 400,
      message: 'a session token uses its own context: customerId and organizationId are for API keys',
      error: 'Bad Request',
    });
  });

  it('answers 400 when an API key names neither or both of customerId and organizationId', async () => {
    const { apiKey, fx } = await newApp({ organizationsEnabled: true });
    const customerId = await fx.customer();
    const orgId = await fx.organization({ [customerId]: 'owner' });
    const expected = {
      statusCode: 400,
      message: 'exactly one of customerId or organizationId is required',
      error: 'Bad Request',
    };
    const neither = await get('/v1/entitlements', apiKey);
    expect(neither.status).toBe(400);
    expect(neither.body).toEqual(expected);
    const both = await get(`/v1/entitlements?customerId=${customerId}&organizationId=${orgId}`, apiKey);
    expect(both.status).toBe(400);
    expect(both.body).toEqual(expected);
  });

  it('answers 400 naming an unknown query parameter', async () => {
    const { apiKey, fx } = await newApp();
    const customerId = await fx.customer();
    const res = await get(`/v1/entitlements?customerId=${customerId}&plan=x`, apiKey);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('unknown field: plan');
  });

  it('answers 404 for a customer of another app, exactly as for an unknown one', async () => {
    const mine = await newApp();
    const theirs = await newApp();
    const foreign = await theirs.fx.customer();
    const res = await get(`/v1/entitlements?customerId=${foreign}`, mine.apiKey);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      statusCode: 404,
      message: `Customer ${foreign} not found`,
      error: 'Not Found',
    });
    const unknown = await get('/v1/entitlements?customerId=cus_nope', mine.apiKey);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('Customer cus_nope not found');
  });

  it('answers 403 for an organization context when the app has organizations disabled', async () => {
    const { apiKey, fx } = await newApp({ organizationsEnabled: false });
    const customerId = await fx.customer();
    const orgId = await fx.organization({ [customerId]: 'owner' });
    const res = await get(`/v1/entitlements?organizationId=${orgId}`, apiKey);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      statusCode: 403,
      message: 'Organizations are not enabled for this app',
      error: 'Forbidden',
    });
  });

  it('answers 404 for an organization of another app', async () => {
    const mine = await newApp({ organizationsEnabled: true });
    const theirs = await newApp({ organizationsEnabled: true });
    const orgId = await theirs.fx.organization({ [await theirs.fx.customer()]: 'owner' });
    const res = await get(`/v1/entitlements?organizationId=${orgId}`, mine.apiKey);
    expect(res.status).toBe(404);
    expect(res.body.message).toBe(`Organization ${orgId} not found`);
  });

  it('answers 401 without a credential and 403 with the admin token', async () => {
    const none = await get('/v1/entitlements?customerId=cus_x');
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('Unauthorized');
    const admin = await get('/v1/entitlements?customerId=cus_x', server.adminToken);
    expect(admin.status).toBe(403);
    expect(admin.body.error).toBe('Forbidden');
  });
});

describe('GET /v1/entitlements/check/:feature', () => {
  let apiKey: string;
  let customerId: string;
  beforeAll(async () => {
    const app = await newApp();
    apiKey = app.apiKey;
    const plan = await app.fx.plan('pro', {
      sso: true,
      audit: false,
      seats: 10,
      exports: 0,
      tier: 'gold',
      region: '',
    });
    customerId = await app.fx.customer();
    await app.fx.subscription({ customerId }, plan, 'active');
  });

  const check = (feature: string) =>
    get(`/v1/entitlements/check/${feature}?customerId=${customerId}`, apiKey);

  it.each([
    ['sso', true, true],
    ['audit', false, false],
    ['seats', true, 10],
    ['exports', false, 0],
    ['tier', true, 'gold'],
    ['region', false, ''],
  ])('reports %s as allowed=%s with its value', async (feature, allowed, value) => {
    const res = await check(feature as string);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ feature, allowed, value });
  });

  it('answers allowed: false, value: null for an unknown feature', async () => {
    const res = await check('teleport');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ feature: 'teleport', allowed: false, value: null });
  });

  it("never takes an object's built-in properties for features", async () => {
    for (const feature of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const res = await check(feature);
      expect(res.body).toEqual({ feature, allowed: false, value: null });
    }
  });

  it('answers allowed: false for any feature when there is no plan at all', async () => {
    const { apiKey: key, fx } = await newApp();
    const id = await fx.customer();
    const res = await get(`/v1/entitlements/check/sso?customerId=${id}`, key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ feature: 'sso', allowed: false, value: null });
  });

  it('answers 400 for an over-long feature name', async () => {
    const res = await check('f'.repeat(201));
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('must be at most 200 characters');
  });
});

describe('organization context', () => {
  it("checks the organization's subscription in the organization context and the personal plan outside it", async () => {
    const { apiKey, fx } = await newApp({ organizationsEnabled: true });
    await fx.plan('free', { sso: false }, { isDefault: true });
    const personal = await fx.plan('solo', { sso: false, seats: 1 });
    const team = await fx.plan('team', { sso: true, seats: 25 });
    const alice = await fx.customer();
    const bob = await fx.customer();
    await fx.subscription({ customerId: alice }, personal, 'active');
    const orgId = await fx.organization({ [alice]: 'owner', [bob]: 'member' });
    // The paying member is recorded on the organization's subscription; it stays the organization's.
    await fx.subscription({ organizationId: orgId, customerId: alice }, team, 'active');

    const aliceOrg = await fx.session(alice, orgId);
    const bobOrg = await fx.session(bob, orgId);
    for (const token of [aliceOrg, bobOrg]) {
      const res = await get('/v1/entitlements/check/sso', token);
      expect(res.body).toEqual({ feature: 'sso', allowed: true, value: true });
    }
    const alicePersonal = await get('/v1/entitlements', await fx.session(alice));
    expect(alicePersonal.body).toEqual({ planName: 'Solo', features: { sso: false, seats: 1 } });
    const bobPersonal = await get('/v1/entitlements', await fx.session(bob));
    expect(bobPersonal.body).toEqual({ planName: 'Free', features: { sso: false } });
    const byKey = await get(`/v1/entitlements?organizationId=${orgId}`, apiKey);
    expect(byKey.body).toEqual({ planName: 'Team', features: { sso: true, seats: 25 } });
  });
});

describe('GraphQL', () => {
  const ENTITLEMENTS = `query($c: ID, $o: ID) { entitlements(customerId: $c, organizationId: $o) { planName features } }`;
  const CHECK = `query($f: String!, $c: ID, $o: ID) {
    checkEntitlement(feature: $f, customerId: $c, organizationId: $o) { feature allowed value }
  }`;

  it('answers exactly what REST answers, for API keys and session tokens', async () => {
    const { apiKey, fx } = await newApp({ organizationsEnabled: true });
    const team = await fx.plan('team', { sso: true, seats: 25, tier: 'gold' });
    await fx.plan('free', { sso: false }, { isDefault: true });
    const customerId = await fx.customer();
    const orgId = await fx.organization({ [customerId]: 'owner' });
    await fx.subscription({ organizationId: orgId }, team, 'active');
    const personal = await fx.session(customerId);
    const inOrg = await fx.session(customerId, orgId);

    const cases: [string, Record<string, string>, string][] = [
      [apiKey, { customerId }, `?customerId=${customerId}`],
      [apiKey, { organizationId: orgId }, `?organizationId=${orgId}`],
      [personal, {}, ''],
      [inOrg, {}, ''],
    ];
    for (const [token, ids, query] of cases) {
      const vars = { c: ids.customerId, o: ids.organizationId };
      const rest = await get(`/v1/entitlements${query}`, token);
      const gql = await server.graphql(ENTITLEMENTS, vars, token);
      expect(gql.body).toEqual({ data: { entitlements: rest.body } });
      for (const feature of ['sso', 'seats', 'tier', 'nope']) {
        const restCheck = await get(`/v1/entitlements/check/${feature}${query}`, token);
        const gqlCheck = await server.graphql(CHECK, { f: feature, ...vars }, token);
        expect(gqlCheck.body).toEqual({ data: { checkEntitlement: restCheck.body } });
      }
    }
  });

  it('rejects a missing context with the same message as REST', async () => {
    const { apiKey } = await newApp();
    const res = await server.graphql(ENTITLEMENTS, {}, apiKey);
    expect(res.body.data).toBeNull();
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message: 'exactly one of customerId or organizationId is required',
        extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
      }),
    ]);
  });
});

describe('changes are visible at once', () => {
  it('reflects subscription and plan changes on the very next check', async () => {
    const { fx } = await newApp();
    await fx.plan('free', { sso: false }, { isDefault: true });
    const pro = await fx.plan('pro', { sso: true });
    const customerId = await fx.customer();
    const token = await fx.session(customerId);
    const sso = async () => (await get('/v1/entitlements/check/sso', token)).body.allowed;

    expect(await sso()).toBe(false);
    const sub = await fx.subscription({ customerId }, pro, 'active');
    expect(await sso()).toBe(true);
    await fx.setSubscription(sub, { status: 'paused' });
    expect(await sso()).toBe(false);
    await fx.setSubscription(sub, { status: 'active' });
    expect(await sso()).toBe(true);
    await fx.setPlanFeatures(pro, { sso: false });
    expect(await sso()).toBe(false);
    await fx.setSubscription(sub, { status: 'canceled' });
    expect(await sso()).toBe(false);
  });
});
