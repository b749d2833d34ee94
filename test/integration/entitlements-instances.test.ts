import { withContext } from '../../src/db.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Two Tollgate instances on one database, each with its own in-process entitlement cache: a change
 * committed through one must show on the very next check on the other, with no wait in between.
 */
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer(), startTestServer()]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const sso = async (server: TestServer, token: string) => {
  const res = await server.http.get('/v1/entitlements/check/sso').set('authorization', `Bearer ${token}`);
  expect(res.status).toBe(200);
  return res.body.value as boolean | null;
};

describe('entitlements across instances', () => {
  it('shows every committed subscription change on the very next check on the other instance', async () => {
    const { appId } = await a.createApp();
    const fx = new Fixtures(a, appId);
    await fx.plan('free', { sso: false }, { isDefault: true });
    const pro = await fx.plan('pro', { sso: true });
    const customerId = await fx.customer();
    const token = await fx.session(customerId);
    const sub = await fx.subscription({ customerId }, pro, 'active');

    // Each round primes both caches, changes the subscription through instance A, then reads B at once.
    const rounds = [
      ['paused', false],
      ['active', true],
      ['past_due', true],
      ['unpaid', false],
      ['trialing', true],
      ['canceled', false],
    ] as const;
    for (let i = 0; i < 4; i++) {
      for (const [status, expected] of rounds) {
        await Promise.all([sso(a, token), sso(b, token)]);
        await fx.setSubscription(sub, { status });
        expect(await sso(b, token)).toBe(expected);
        expect(await sso(a, token)).toBe(expected);
      }
    }
  });

  it('shows a plan change made on one instance on the other at once', async () => {
    const { appId } = await a.createApp();
    const fx = new Fixtures(a, appId);
    const pro = await fx.plan('pro', { sso: true });
    const customerId = await fx.customer();
    await fx.subscription({ customerId }, pro, 'active');
    const token = await fx.session(customerId);
    expect(await sso(b, token)).toBe(true);
    await fx.setPlanFeatures(pro, { sso: false });
    expect(await sso(b, token)).toBe(false);
    await fx.setPlanFeatures(pro, { sso: true });
    expect(await sso(b, token)).toBe(true);
  });

  it('refuses a revoked session and a removed member on the other instance at the very next request', async () => {
    const { appId, apiKey } = await a.createApp({ organizationsEnabled: true });
    const fx = new Fixtures(a, appId);
    const owner = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [member]: 'member' });
    const personal = await fx.session(member);
    const inOrg = await fx.session(member, org);
    const entitlements = (token: string) =>
      b.http.get('/v1/entitlements').set('authorization', `Bearer ${token}`);
    expect((await entitlements(personal)).status).toBe(200);
    expect((await entitlements(inOrg)).status).toBe(200);

    const removed = await a.graphql(
      'mutation($o: ID!, $c: ID!) { removeOrganizationMember(organizationId: $o, customerId: $c) }',
      { o: org, c: member },
      apiKey,
    );
    expect(removed.body).toEqual({ data: { removeOrganizationMember: true } });
    expect((await entitlements(inOrg)).status).toBe(401);
    expect((await entitlements(personal)).status).toBe(200);

    await withContext(a.deps.orm, () =>
      a.deps.orm.em
        .getConnection()
        .execute('update session set revoked_at = now() where customer_id = ?', [member]),
    );
    const revoked = await entitlements(personal);
    expect(revoked.status).toBe(401);
    expect(revoked.body).toEqual({
      statusCode: 401,
      message: 'Invalid or expired session token',
      error: 'Unauthorized',
    });
  });

  it('keeps serving the committed state when a change is rolled back', async () => {
    const { appId } = await a.createApp();
    const fx = new Fixtures(a, appId);
    const pro = await fx.plan('pro', { sso: true });
    const customerId = await fx.customer();
    const sub = await fx.subscription({ customerId }, pro, 'active');
    const token = await fx.session(customerId);
    expect(await sso(b, token)).toBe(true);

    const orm = a.deps.orm;
    await expect(
      withContext(orm, () =>
        orm.em.transactional(async (em) => {
          const row = await em.findOneOrFail(Subscription, sub);
          row.status = 'canceled';
          await em.flush();
          // Inside the transaction the core sees its own uncommitted write…
          expect(await a.services.entitlements.resolve({ appId, customerId })).toEqual({
            planName: null,
            features: {},
          });
          throw new Error('roll back');
        }),
      ),
    ).rejects.toThrow('roll back');
    // …and nobody else ever does, nor is it left in a cache.
    expect(await sso(a, token)).toBe(true);
    expect(await sso(b, token)).toBe(true);
  });

  it('falls back to the database when its listening connection is lost, then listens again', async () => {
    const { appId } = await a.createApp();
    const fx = new Fixtures(a, appId);
    const pro = await fx.plan('pro', { sso: true });
    const customerId = await fx.customer();
    const sub = await fx.subscription({ customerId }, pro, 'active');
    const token = await fx.session(customerId);
    expect(await sso(b, token)).toBe(true);

    // Ends every change listener of this test database (other test files' caches fall back the same way).
    await withContext(a.deps.orm, () =>
      a.deps.orm.em.getConnection().execute(
        `select pg_terminate_backend(pid) from pg_stat_activity
            where datname = current_database() and application_name = 'tollgate-changes'`,
      ),
    );
    await fx.setSubscription(sub, { status: 'canceled' });
    expect(await sso(b, token)).toBe(null);
    await fx.setSubscription(sub, { status: 'active' });
    expect(await sso(b, token)).toBe(true);

    // The connection is retried on demand, at most once a second; once back, changes still show at once.
    await eventually(
      async () => {
        if (b.services.changes.listening) return true;
        await withContext(b.deps.orm, () => b.services.entitlements.resolve({ appId, customerId }));
        return undefined;
      },
      { what: "instance b's change feed to reconnect", intervalMs: 100 },
    );
    expect(b.services.changes.listening).toBe(true);
    await fx.setSubscription(sub, { status: 'paused' });
    expect(await sso(b, token)).toBe(null);
  });
});
