import { ManualClock } from '../../src/core/clock.js';
import { ValidationError } from '../../src/core/errors.js';
import { ADMIN } from '../../src/core/principal.js';
import { withContext } from '../../src/db.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { expectDomainError } from '../helpers/services.js';

/**
 * Metered features over /v1 with exact balances. The clock starts well after the fixtures' rows are
 * created (real time), and moves to cross period boundaries.
 */
const START = new Date('2027-03-10T12:00:00.000Z');
const DAY = 86_400_000;
const clock = new ManualClock(START);
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => clock.set(START));

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const METERED = { limit: 1000, reset: 'month' } as const;

async function setup(features: Record<string, unknown> = { calls: METERED }, settings = {}) {
  const { appId, apiKey } = await server.createApp(settings);
  const fx = new Fixtures(server, appId);
  const planId = await fx.plan('free', features as never, { isDefault: true });
  const customerId = await fx.customer();
  return { appId, apiKey, fx, planId, customerId };
}

async function use(token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return server.http.post('/v1/usage').set(bearer(token)).set(headers).send(body);
}

async function balances(token: string, query = '') {
  const res = await server.http.get(`/v1/balances${query}`).set(bearer(token));
  expect(res.status).toBe(200);
  return res.body.data as Record<string, unknown>[];
}

async function grant(apiKey: string, body: Record<string, unknown>) {
  const res = await server.http.post('/v1/credit-grants').set(bearer(apiKey)).send(body);
  expect(res.status).toBe(201);
  return res.body as { id: string; remaining: number };
}

/** A customer with 10 calls a month and a grant of 5 more that expires a day after START. */
async function withGrantForADay() {
  const subject = await setup({ calls: { limit: 10, reset: 'month' } });
  await grant(subject.apiKey, {
    customerId: subject.customerId,
    feature: 'calls',
    amount: 5,
    expiresAt: new Date(START.getTime() + DAY).toISOString(),
  });
  return subject;
}

const monthEnd = '2027-04-01T00:00:00.000Z';

describe('metered plan features', () => {
  it('rejects a malformed metered feature and accepts one with rollover', async () => {
    const { appId } = await server.createApp();
    const upsert = (features: unknown) =>
      withContext(server.deps.orm, () =>
        server.services.plans.upsertPlan(ADMIN, appId, { id: 'p', name: 'P', features }),
      );
    await expectDomainError(
      upsert({ calls: { limit: -1, reset: 'month' } }),
      ValidationError,
      /features\.calls/,
    );
    await expectDomainError(
      upsert({ calls: { limit: 10, reset: 'week' } }),
      ValidationError,
      /features\.calls/,
    );
    await expectDomainError(
      upsert({ calls: { limit: 10, reset: 'day', extra: 1 } }),
      ValidationError,
      /features\.calls/,
    );
    const plan = await upsert({ calls: { limit: 10, reset: 'day', rollover: { max: 5 } } });
    expect(plan.features).toEqual({ calls: { limit: 10, reset: 'day', rollover: { max: 5 } } });
  });

  it('shows a metered feature as its limit in entitlements, and its live balance in the check', async () => {
    const { apiKey, customerId } = await setup({ calls: METERED, sso: true });
    const ent = await server.http.get(`/v1/entitlements?customerId=${customerId}`).set(bearer(apiKey));
    expect(ent.body).toEqual({ planName: 'Free', features: { calls: 1000, sso: true } });
    expect((await use(apiKey, { customerId, feature: 'calls', amount: 998 })).status).toBe(200);
    const check = await server.http
      .get(`/v1/entitlements/check/calls?customerId=${customerId}&amount=3`)
      .set(bearer(apiKey));
    expect(check.status).toBe(200);
    expect(check.body).toEqual({
      feature: 'calls',
      allowed: false,
      value: 1000,
      balance: { limit: 1000, granted: 0, used: 998, remaining: 2, overage: 0, resetsAt: monthEnd },
    });
    const two = await server.http
      .get(`/v1/entitlements/check/calls?customerId=${customerId}&amount=2`)
      .set(bearer(apiKey));
    expect(two.body.allowed).toBe(true);
    const plain = await server.http
      .get(`/v1/entitlements/check/calls?customerId=${customerId}`)
      .set(bearer(apiKey));
    expect(plain.body.allowed).toBe(true);
  });
});

describe('POST /v1/usage', () => {
  it('consumes, refuses a short balance without recording, and answers exact balances', async () => {
    const { apiKey, customerId } = await setup();
    const first = await use(apiKey, { customerId, feature: 'calls', amount: 600, metadata: { job: 'a' } });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^use_/),
      feature: 'calls',
      amount: 600,
      allowed: true,
      balance: { limit: 1000, granted: 0, used: 600, remaining: 400, overage: 0, resetsAt: monthEnd },
    });
    const refused = await use(apiKey, { customerId, feature: 'calls', amount: 401 });
    expect(refused.status).toBe(200);
    expect(refused.body).toEqual({
      allowed: false,
      balance: { limit: 1000, granted: 0, used: 600, remaining: 400, overage: 0, resetsAt: monthEnd },
    });
    const last = await use(apiKey, { customerId, feature: 'calls', amount: 400 });
    expect(last.body.balance).toEqual({
      limit: 1000,
      granted: 0,
      used: 1000,
      remaining: 0,
      overage: 0,
      resetsAt: monthEnd,
    });
    expect(await balances(apiKey, `?customerId=${customerId}`)).toEqual([
      { feature: 'calls', limit: 1000, granted: 0, used: 1000, remaining: 0, overage: 0, resetsAt: monthEnd },
    ]);
  });

  it('answers 400 for a feature that is not metered, allowed: false for one the plan lacks', async () => {
    const { apiKey, customerId } = await setup({ calls: METERED, sso: true });
    const notMetered = await use(apiKey, { customerId, feature: 'sso' });
    expect(notMetered.status).toBe(400);
    expect(notMetered.body.message).toBe('feature: sso is not a metered feature of the plan');
    const missing = await use(apiKey, { customerId, feature: 'nothing' });
    expect(missing.status).toBe(200);
    expect(missing.body).toEqual({ allowed: false, balance: null });
    expect((await use(apiKey, { customerId, feature: 'calls', amount: 0 })).status).toBe(400);
    expect((await use(apiKey, { customerId, feature: 'calls', amount: 1.5 })).status).toBe(400);
    expect((await use(apiKey, { customerId, feature: 'calls', bogus: 1 })).status).toBe(400);
  });

  it("answers 404 for another app's customer before validating anything else", async () => {
    const { apiKey } = await setup();
    const other = await setup();
    const res = await use(apiKey, { customerId: other.customerId, feature: '', amount: -5 });
    expect(res.status).toBe(404);
    expect(res.body.message).toBe(`Customer ${other.customerId} not found`);
  });

  it('replays the first answer for a repeated Idempotency-Key and consumes nothing more', async () => {
    const { apiKey, customerId } = await setup();
    const key = { 'idempotency-key': 'usage-once-1' };
    const a = await use(apiKey, { customerId, feature: 'calls', amount: 7 }, key);
    const b = await use(apiKey, { customerId, feature: 'calls', amount: 7 }, key);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.body).toEqual(a.body);
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      used: 7,
      remaining: 993,
    });
  });
});

describe('burn-down, grants, expiry, void and refunds', () => {
  it('pays by priority, then earliest expiry (none last), then creation', async () => {
    const { apiKey, customerId } = await setup({ calls: { limit: 10, reset: 'month' } });
    const late = await grant(apiKey, { customerId, feature: 'calls', amount: 10 });
    const expiring = await grant(apiKey, {
      customerId,
      feature: 'calls',
      amount: 10,
      expiresAt: new Date(START.getTime() + 5 * DAY).toISOString(),
    });
    const urgent = await grant(apiKey, { customerId, feature: 'calls', amount: 10, priority: 10 });
    const neverFirst = await grant(apiKey, { customerId, feature: 'calls', amount: 10, priority: 90 });
    // Priority 10 first; then (priority 50) the grant expiring in 5 days, the allowance (expires at the
    // month's end, 22 days), the grant without expiry; priority 90 last.
    const res = await use(apiKey, { customerId, feature: 'calls', amount: 35 });
    expect(res.body.balance).toEqual({
      limit: 10,
      granted: 40,
      used: 35,
      remaining: 15,
      overage: 0,
      resetsAt: monthEnd,
    });
    const list = await server.http.get(`/v1/credit-grants?customerId=${customerId}`).set(bearer(apiKey));
    const remaining = Object.fromEntries(list.body.data.map((g: any) => [g.id, g.remaining]));
    expect(remaining).toEqual({ [urgent.id]: 0, [expiring.id]: 0, [late.id]: 5, [neverFirst.id]: 10 });
  });

  it('stops counting a grant in a check answered from memory once the grant expires', async () => {
    const { apiKey, customerId } = await withGrantForADay();
    const check = async () => {
      const res = await server.http
        .get(`/v1/entitlements/check/calls?customerId=${customerId}`)
        .set(bearer(apiKey));
      expect(res.status).toBe(200);
      return res.body.balance;
    };
    // The second check is answered from the instance's memory; the grant's expiry ends that.
    expect(await check()).toMatchObject({ granted: 5, remaining: 15 });
    expect(await check()).toMatchObject({ granted: 5, remaining: 15 });
    clock.set(new Date(START.getTime() + DAY));
    expect(await check()).toMatchObject({ granted: 0, remaining: 10 });
  });

  it('stops counting an expired grant, and a voided grant loses its unspent part (once)', async () => {
    const { apiKey, customerId } = await withGrantForADay();
    const voidable = await grant(apiKey, { customerId, feature: 'calls', amount: 100, priority: 0 });
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      granted: 105,
      remaining: 115,
    });
    await use(apiKey, { customerId, feature: 'calls', amount: 30 });
    clock.advance(2 * DAY);
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      granted: 100,
      used: 30,
      remaining: 80,
    });
    const voided = await server.http.post(`/v1/credit-grants/${voidable.id}/void`).set(bearer(apiKey));
    expect(voided.status).toBe(200);
    expect(voided.body).toMatchObject({
      id: voidable.id,
      amount: 100,
      remaining: 0,
      voidedAt: expect.any(String),
    });
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      limit: 10,
      granted: 0,
      used: 30,
      remaining: 10,
    });
    const again = await server.http.post(`/v1/credit-grants/${voidable.id}/void`).set(bearer(apiKey));
    expect(again.status).toBe(409);
  });

  it('refunds to the buckets that paid, once; a part whose bucket expired lapses', async () => {
    const { apiKey, customerId } = await setup({ calls: { limit: 10, reset: 'month' } });
    const expiring = await grant(apiKey, {
      customerId,
      feature: 'calls',
      amount: 4,
      priority: 0,
      expiresAt: new Date(START.getTime() + DAY).toISOString(),
    });
    const used = await use(apiKey, { customerId, feature: 'calls', amount: 6 });
    expect(used.body.balance).toEqual({
      limit: 10,
      granted: 4,
      used: 6,
      remaining: 8,
      overage: 0,
      resetsAt: monthEnd,
    });
    clock.advance(2 * DAY);
    const refund = await server.http.post(`/v1/usage/${used.body.id}/refund`).set(bearer(apiKey));
    expect(refund.status).toBe(200);
    // The allowance's 2 come back; the expired grant's 4 lapse.
    expect(refund.body).toEqual({
      balance: {
        feature: 'calls',
        limit: 10,
        granted: 0,
        used: 0,
        remaining: 10,
        overage: 0,
        resetsAt: monthEnd,
      },
    });
    const list = await server.http.get(`/v1/credit-grants?customerId=${customerId}`).set(bearer(apiKey));
    expect(list.body.data).toEqual([expect.objectContaining({ id: expiring.id, remaining: 0 })]);
    const twice = await server.http.post(`/v1/usage/${used.body.id}/refund`).set(bearer(apiKey));
    expect(twice.status).toBe(409);
    const other = await setup();
    const foreign = await server.http.post(`/v1/usage/${used.body.id}/refund`).set(bearer(other.apiKey));
    expect(foreign.status).toBe(404);
  });

  it('refunds into an active grant in full', async () => {
    const { apiKey, customerId } = await setup({ calls: { limit: 0, reset: 'month' } });
    const g = await grant(apiKey, { customerId, feature: 'calls', amount: 50 });
    const used = await use(apiKey, { customerId, feature: 'calls', amount: 20 });
    expect(used.body.balance).toMatchObject({ limit: 0, granted: 50, used: 20, remaining: 30 });
    const refund = await server.http.post(`/v1/usage/${used.body.id}/refund`).set(bearer(apiKey));
    expect(refund.body.balance).toMatchObject({ granted: 50, used: 0, remaining: 50 });
    const list = await server.http.get(`/v1/credit-grants?customerId=${customerId}`).set(bearer(apiKey));
    expect(list.body.data[0]).toMatchObject({ id: g.id, remaining: 50 });
  });
});

describe('periods', () => {
  it('resets at the UTC month boundary and rolls over the unused allowance up to its max', async () => {
    const { apiKey, customerId } = await setup({
      calls: { limit: 1000, reset: 'month', rollover: { max: 500 } },
    });
    await use(apiKey, { customerId, feature: 'calls', amount: 300 });
    clock.set(new Date('2027-04-02T00:00:00.000Z'));
    const april = '2027-05-01T00:00:00.000Z';
    expect(await balances(apiKey, `?customerId=${customerId}`)).toEqual([
      { feature: 'calls', limit: 1000, granted: 500, used: 0, remaining: 1500, overage: 0, resetsAt: april },
    ]);
    // The rollover (from March) pays before April's allowance.
    const res = await use(apiKey, { customerId, feature: 'calls', amount: 600 });
    expect(res.body.balance).toEqual({
      limit: 1000,
      granted: 500,
      used: 600,
      remaining: 900,
      overage: 0,
      resetsAt: april,
    });
    // May: April's unused 900 is capped at 500; the rest of April's rollover expired with April.
    clock.set(new Date('2027-05-20T00:00:00.000Z'));
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      limit: 1000,
      granted: 500,
      used: 0,
      remaining: 1500,
    });
  });

  it('resets daily and never', async () => {
    const { apiKey, customerId } = await setup({
      daily: { limit: 3, reset: 'day' },
      lifetime: { limit: 2, reset: 'never' },
    });
    await use(apiKey, { customerId, feature: 'daily', amount: 3 });
    await use(apiKey, { customerId, feature: 'lifetime', amount: 2 });
    expect((await use(apiKey, { customerId, feature: 'daily' })).body.allowed).toBe(false);
    clock.advance(DAY);
    expect(await balances(apiKey, `?customerId=${customerId}`)).toEqual([
      {
        feature: 'daily',
        limit: 3,
        granted: 0,
        used: 0,
        remaining: 3,
        overage: 0,
        resetsAt: '2027-03-12T00:00:00.000Z',
      },
      { feature: 'lifetime', limit: 2, granted: 0, used: 2, remaining: 0, overage: 0, resetsAt: null },
    ]);
  });

  it("derives billing periods from the subscription's anchor, across a renewal not yet reported", async () => {
    const { apiKey, fx, customerId } = await setup({ calls: { limit: 5, reset: 'month' } });
    const pro = await fx.plan('pro', { calls: { limit: 100, reset: 'billing_period' } });
    const subId = await fx.subscription({ customerId }, pro, 'active');
    const anchor = new Date('2027-03-20T08:00:00.000Z');
    await withContext(server.deps.orm, async () => {
      const sub = await server.deps.orm.em.findOneOrFail(Subscription, subId);
      sub.currentPeriodEnd = anchor;
      await server.deps.orm.em.flush();
    });
    const first = await use(apiKey, { customerId, feature: 'calls', amount: 40 });
    expect(first.status).toBe(200);
    expect(first.body.balance).toEqual({
      limit: 100,
      granted: 0,
      used: 40,
      remaining: 60,
      overage: 0,
      resetsAt: anchor.toISOString(),
    });
    clock.set(new Date('2027-03-21T00:00:00.000Z'));
    expect(await balances(apiKey, `?customerId=${customerId}`)).toEqual([
      {
        feature: 'calls',
        limit: 100,
        granted: 0,
        used: 0,
        remaining: 100,
        overage: 0,
        resetsAt: '2027-04-20T08:00:00.000Z',
      },
    ]);
  });

  it("counts the period's usage so far against a new plan's limit, both ways", async () => {
    const { apiKey, fx, customerId } = await setup({ calls: { limit: 1000, reset: 'month' } });
    const small = await fx.plan('small', { calls: { limit: 200, reset: 'month' } });
    await use(apiKey, { customerId, feature: 'calls', amount: 300 });
    const sub = await fx.subscription({ customerId }, small, 'active');
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      limit: 200,
      used: 300,
      remaining: 0,
    });
    expect((await use(apiKey, { customerId, feature: 'calls' })).body.allowed).toBe(false);
    await fx.setSubscription(sub, { status: 'canceled' });
    expect((await balances(apiKey, `?customerId=${customerId}`))[0]).toMatchObject({
      limit: 1000,
      used: 300,
      remaining: 700,
    });
  });
});

describe('contexts and credentials', () => {
  it("consumes an organization's balance from a member's session, shared by its members", async () => {
    const { apiKey, fx } = await setup(
      { calls: { limit: 10, reset: 'month' } },
      { organizationsEnabled: true },
    );
    const owner = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [member]: 'member' });
    const memberToken = await fx.session(member, org);
    const ownerToken = await fx.session(owner, org);
    const personal = await fx.session(member);
    expect((await use(memberToken, { feature: 'calls', amount: 4 })).body.balance).toMatchObject({
      remaining: 6,
    });
    expect((await use(ownerToken, { feature: 'calls', amount: 6 })).body.balance).toMatchObject({
      remaining: 0,
    });
    expect((await use(memberToken, { feature: 'calls' })).body.allowed).toBe(false);
    expect(await balances(apiKey, `?organizationId=${org}`)).toEqual([
      expect.objectContaining({ used: 10, remaining: 0 }),
    ]);
    // The member's own balance is untouched.
    expect(await balances(personal)).toEqual([expect.objectContaining({ used: 0, remaining: 10 })]);
  });

  it('lets a session consume and read its own balance, never grant, refund, void or name a subject', async () => {
    const { apiKey, fx, customerId } = await setup();
    const token = await fx.session(customerId);
    const used = await use(token, { feature: 'calls', amount: 2 });
    expect(used.status).toBe(200);
    expect(await balances(token)).toEqual([expect.objectContaining({ used: 2, remaining: 998 })]);
    expect((await use(token, { customerId, feature: 'calls' })).status).toBe(400);
    expect((await server.http.get(`/v1/balances?customerId=${customerId}`).set(bearer(token))).status).toBe(
      400,
    );
    const grantRes = await server.http
      .post('/v1/credit-grants')
      .set(bearer(token))
      .send({ feature: 'calls', amount: 5 });
    expect(grantRes.status).toBe(403);
    expect((await server.http.post(`/v1/usage/${used.body.id}/refund`).set(bearer(token))).status).toBe(403);
    const g = await grant(apiKey, { customerId, feature: 'calls', amount: 5 });
    expect((await server.http.post(`/v1/credit-grants/${g.id}/void`).set(bearer(token))).status).toBe(403);
    expect(
      (await server.http.get(`/v1/credit-grants?customerId=${customerId}`).set(bearer(token))).status,
    ).toBe(403);
    expect((await server.http.post('/v1/usage').send({ feature: 'calls' })).status).toBe(401);
    expect((await server.http.post('/v1/usage').set(bearer(apiKey)).send({ feature: 'calls' })).status).toBe(
      400,
    );
  });
});

describe('GraphQL twins', () => {
  it('records, refunds, grants, voids and reads balances like /v1, with the same credential rules', async () => {
    const { apiKey, fx, customerId } = await setup({ calls: { limit: 10, reset: 'month' } });
    const token = await fx.session(customerId);
    const grantRes = await server.graphql(
      `mutation($input: CreateCreditGrantInput!) { createCreditGrant(input: $input) { id amount remaining priority } }`,
      { input: { customerId, feature: 'calls', amount: 5, priority: 0, description: 'welcome' } },
      apiKey,
    );
    expect(grantRes.body.errors).toBeUndefined();
    const grantId = grantRes.body.data.createCreditGrant.id;
    expect(grantRes.body.data.createCreditGrant).toEqual({
      id: grantId,
      amount: 5,
      remaining: 5,
      priority: 0,
    });
    const bySession = await server.graphql(
      `mutation { createCreditGrant(input: {feature: "calls", amount: 5}) { id } }`,
      {},
      token,
    );
    expect(bySession.body.errors?.[0].extensions.code).toBe('FORBIDDEN');

    const used = await server.graphql(
      `mutation { recordUsage(input: {feature: "calls", amount: 7}) { id allowed feature amount balance { limit granted used remaining overage resetsAt } } }`,
      {},
      token,
    );
    expect(used.body.data.recordUsage).toEqual({
      id: expect.stringMatching(/^use_/),
      allowed: true,
      feature: 'calls',
      amount: 7,
      balance: { limit: 10, granted: 5, used: 7, remaining: 8, overage: 0, resetsAt: monthEnd },
    });
    const check = await server.graphql(
      `{ checkEntitlement(feature: "calls", amount: 9) { allowed value balance { remaining } } }`,
      {},
      token,
    );
    expect(check.body.data.checkEntitlement).toEqual({
      allowed: false,
      value: 10,
      balance: { remaining: 8 },
    });

    const refund = await server.graphql(
      `mutation($id: ID!) { refundUsage(id: $id) { feature used remaining } }`,
      { id: used.body.data.recordUsage.id },
      apiKey,
    );
    expect(refund.body.data.refundUsage).toEqual({ feature: 'calls', used: 0, remaining: 15 });
    const voided = await server.graphql(
      `mutation($id: ID!) { voidCreditGrant(id: $id) { remaining voidedAt } }`,
      { id: grantId },
      apiKey,
    );
    expect(voided.body.data.voidCreditGrant).toEqual({ remaining: 0, voidedAt: expect.any(String) });
    const read = await server.graphql(
      `query($c: ID) { balances(customerId: $c) { feature limit granted used remaining } creditGrants(customerId: $c) { id remaining } }`,
      { c: customerId },
      apiKey,
    );
    expect(read.body.data).toEqual({
      balances: [{ feature: 'calls', limit: 10, granted: 0, used: 0, remaining: 10 }],
      creditGrants: [{ id: grantId, remaining: 0 }],
    });
  });
});

describe('customer erasure', () => {
  it("removes a deleted customer's buckets and usage, and clears its id and metadata from an organization's usage", async () => {
    const { apiKey, fx } = await setup(
      { calls: { limit: 10, reset: 'month' } },
      { organizationsEnabled: true },
    );
    const owner = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [member]: 'member' });
    await grant(apiKey, { customerId: member, feature: 'calls', amount: 5, description: 'personal note' });
    await use(apiKey, { customerId: member, feature: 'calls', amount: 2, metadata: { note: 'mine' } });
    const inOrg = await use(await fx.session(member, org), {
      feature: 'calls',
      amount: 3,
      metadata: { note: 'org' },
    });
    expect(inOrg.status).toBe(200);

    const deleted = await server.http.delete(`/v1/customers/${member}`).set(bearer(apiKey));
    expect(deleted.status).toBe(200);
    const rows = await withContext(server.deps.orm, async () => {
      const connection = server.deps.orm.em.getConnection();
      return {
        buckets: await connection.execute(
          'select count(*)::int as n from credit_bucket where subject_id = ? or customer_id = ?',
          [member, member],
        ),
        usage: await connection.execute(
          'select count(*)::int as n from usage_record where subject_id = ? or customer_id = ?',
          [member, member],
        ),
        orgUsage: await connection.execute(
          'select customer_id, metadata, amount::int as amount from usage_record where subject_id = ?',
          [org],
        ),
      };
    });
    expect(rows.buckets).toEqual([{ n: 0 }]);
    expect(rows.usage).toEqual([{ n: 0 }]);
    expect(rows.orgUsage).toEqual([{ customer_id: null, metadata: {}, amount: 3 }]);
    // The organization's balance is unchanged.
    expect(await balances(apiKey, `?organizationId=${org}`)).toEqual([
      expect.objectContaining({ used: 3, remaining: 7 }),
    ]);
  });
});
