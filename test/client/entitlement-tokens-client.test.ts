import { TollgateAuth } from '@tollgate/client';
import { ManualClock } from '../../src/core/clock.js';
import { ADMIN } from '../../src/core/principal.js';
import { withContext } from '../../src/db.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The client library's entitlement tokens against a real Tollgate: `entitlementToken()` (fetched once,
 * fetched again on a newer version), `verifyEntitlementToken()` offline with `has()`/`value()`, and the
 * tokens its verifier refuses.
 */
const clock = new ManualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server?.close();
});

/** A fetch that counts the requests it sends. */
function countingFetch() {
  const calls: string[] = [];
  const counted: typeof fetch = (input, init) => {
    calls.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
  return { calls, fetch: counted };
}

async function setUp() {
  const { appId, apiKey } = await server.createApp();
  const fx = new Fixtures(server, appId);
  const counting = countingFetch();
  const auth = new TollgateAuth({ appId, baseUrl: server.url, fetch: counting.fetch });
  return { appId, apiKey, fx, auth, calls: counting.calls };
}

describe('TollgateAuth entitlement tokens', () => {
  it('fetches a token once, verifies it offline and checks features in memory', async () => {
    const { appId, fx, auth, calls } = await setUp();
    const pro = await fx.plan('pro', {
      sso: true,
      seats: 5,
      tier: 'gold',
      export: false,
      api: { limit: 0, reset: 'day' },
    });
    const customerId = await fx.customer();
    await fx.subscription({ customerId }, pro, 'active');
    const session = await fx.session(customerId);

    const issued = await auth.entitlementToken(session);
    expect(await auth.entitlementToken(session)).toBe(issued);
    const verified = await auth.verifyEntitlementToken(issued.token);
    await auth.verifyEntitlementToken(issued.token);
    expect(calls).toEqual([
      `POST /v1/apps/${appId}/auth/entitlement-token`,
      `GET /v1/apps/${appId}/.well-known/jwks.json`,
    ]);
    expect(verified.has('sso')).toBe(true);
    expect(verified.has('seats')).toBe(true);
    expect(verified.has('tier')).toBe(true);
    expect(verified.has('export')).toBe(false);
    expect(verified.has('api')).toBe(false);
    expect(verified.has('missing')).toBe(false);
    expect(verified.has('toString')).toBe(false);
    expect(verified.value('seats')).toBe(5);
    expect(verified.value('tier')).toBe('gold');
    expect(verified.value('missing')).toBeNull();
    expect(verified.claims).toMatchObject({ sub: customerId, aud: appId, plan: { id: 'pro', name: 'Pro' } });
  });

  it('fetches a new token once a session lookup shows a newer entitlement version', async () => {
    const { fx, auth } = await setUp();
    const free = await fx.plan('free', { projects: 1 }, { isDefault: true });
    const pro = await fx.plan('pro', { projects: 50 });
    const customerId = await fx.customer();
    const subscriptionId = await fx.subscription({ customerId }, free, 'active');
    const session = await fx.session(customerId);
    const first = await auth.verifyEntitlementToken((await auth.entitlementToken(session)).token);
    expect(first.value('projects')).toBe(1);

    await fx.setSubscription(subscriptionId, { planId: pro });
    await eventually(
      async () => ((await auth.getSession(session)).entitlements.planName === 'Pro' ? true : undefined),
      { what: 'the upgrade in the session lookup' },
    );
    const second = await auth.verifyEntitlementToken((await auth.entitlementToken(session)).token);
    expect(second.ev).toBeGreaterThan(first.ev);
    expect(second.value('projects')).toBe(50);

    // A webhook's version works the same way: the cached token is older, so a new one is fetched.
    const cached = await auth.entitlementToken(session);
    auth.noteEntitlementsVersion(second.ev + 1);
    const refetched = await auth.entitlementToken(session);
    expect(refetched).not.toBe(cached);
  });

  it('refuses an expired token, another app’s token, a tampered token and a revoked key’s token', async () => {
    const { appId, fx, auth } = await setUp();
    const other = await setUp();
    const customerId = await fx.customer();
    const session = await fx.session(customerId);

    // Expired: issued an hour ago (beyond the lifetime and the 60 s tolerance).
    const now = clock.now();
    clock.set(new Date(now.getTime() - 3600_000));
    let old: string;
    try {
      old = (await new TollgateAuth({ appId, baseUrl: server.url }).entitlementToken(session)).token;
    } finally {
      clock.set(now);
    }
    await expect(auth.verifyEntitlementToken(old)).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' });

    const token = (await auth.entitlementToken(session)).token;
    await auth.verifyEntitlementToken(token);

    const foreign = (await other.auth.entitlementToken(await other.fx.session(await other.fx.customer())))
      .token;
    await expect(auth.verifyEntitlementToken(foreign)).rejects.toMatchObject({
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });

    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, ent: { admin: true } })).toString('base64url');
    await expect(auth.verifyEntitlementToken(`${header}.${forged}.${signature}`)).rejects.toMatchObject({
      code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    });

    const kid = JSON.parse(Buffer.from(header!, 'base64url').toString()).kid;
    await withContext(server.deps.orm, () => server.services.entitlementTokens.revoke(ADMIN, appId, kid));
    // A verifier whose key-set cache has refreshed (here a new one) refuses the revoked key's tokens.
    const fresh = new TollgateAuth({ appId, baseUrl: server.url });
    await expect(fresh.verifyEntitlementToken(token)).rejects.toMatchObject({
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });
  });
});
