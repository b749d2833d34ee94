import { createRemoteJWKSet, customFetch, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import { ManualClock } from '../../src/core/clock.js';
import { ADMIN } from '../../src/core/principal.js';
import { withContext } from '../../src/db.js';
import { SecretBox } from '../../src/modules/webhooks/secret-box.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const clock = new ManualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server.close();
});

async function newApp(settings: Record<string, unknown> = {}) {
  const { appId, apiKey } = await server.createApp(settings);
  return { appId, apiKey, fx: new Fixtures(server, appId) };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const jwksUrl = (appId: string) => new URL(`${server.url}/v1/apps/${appId}/.well-known/jwks.json`);
const issuer = (appId: string) => `${server.deps.config.publicBaseUrl}/v1/apps/${appId}`;

async function issue(appId: string, credential: string, body?: Record<string, unknown>) {
  const req = server.http.post(`/v1/apps/${appId}/auth/entitlement-token`).set(bearer(credential));
  return body === undefined ? req : req.send(body);
}

async function tokenOf(appId: string, credential: string, body?: Record<string, unknown>): Promise<string> {
  const res = await issue(appId, credential, body);
  expect(res.status).toBe(200);
  return res.body.token as string;
}

/** A verifier as an app builds one from the JWKS URL alone; counts its JWKS fetches. */
function remoteVerifier(appId: string) {
  let fetches = 0;
  const keys = createRemoteJWKSet(jwksUrl(appId), {
    [customFetch]: (url, options) => {
      fetches++;
      return fetch(url, options);
    },
  });
  const verify = async (token: string, currentDate = clock.now()): Promise<JWTPayload> =>
    (
      await jwtVerify(token, keys, {
        issuer: issuer(appId),
        audience: appId,
        algorithms: ['ES256'],
        currentDate,
      })
    ).payload;
  return { verify, keys, fetches: () => fetches };
}

async function admin<T>(fn: () => Promise<T>): Promise<T> {
  return withContext(server.deps.orm, fn);
}

describe('POST /v1/apps/:appId/auth/entitlement-token', () => {
  it("signs a customer session's claims, verifiable with jose's remote key set from the JWKS URL alone", async () => {
    const { appId, fx } = await newApp();
    const pro = await fx.plan('pro', {
      sso: true,
      seats: 5,
      tier: 'gold',
      api_calls: { limit: 1000, reset: 'month' },
    });
    const customerId = await fx.customer();
    await fx.subscription({ customerId }, pro, 'active');
    const session = await fx.session(customerId);

    const res = await issue(appId, session);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(Object.keys(res.body).sort()).toEqual(['expiresAt', 'token']);
    expect(decodeProtectedHeader(res.body.token)).toMatchObject({ alg: 'ES256', typ: 'JWT' });

    const payload = await remoteVerifier(appId).verify(res.body.token);
    const now = Math.floor(clock.now().getTime() / 1000);
    expect(payload).toEqual({
      iss: issuer(appId),
      aud: appId,
      sub: customerId,
      plan: { id: 'pro', name: 'Pro' },
      // A metered feature: its limit, never a live balance.
      ent: { sso: true, seats: 5, tier: 'gold', api_calls: 1000 },
      ev: expect.any(Number),
      iat: now,
      exp: now + 300,
    });
    expect(payload.ev).toBeGreaterThan(0);
    expect(res.body.expiresAt).toBe(new Date((now + 300) * 1000).toISOString());
    expect(res.headers['tollgate-entitlements-version']).toBe(String(payload.ev));

    // The session lookup carries the same version in a header; its body keeps the interface's shape.
    const lookup = await server.http.get(`/v1/apps/${appId}/auth/session`).set(bearer(session));
    expect(lookup.status).toBe(200);
    expect(lookup.headers['tollgate-entitlements-version']).toBe(String(payload.ev));
    expect(Object.keys(lookup.body).sort()).toEqual(['customer', 'entitlements']);
  });

  it('signs an organization context: org and org_role from a session, org as subject for an API key', async () => {
    const { appId, apiKey, fx } = await newApp({ organizationsEnabled: true });
    const team = await fx.plan('team', { seats: 20 });
    const customerId = await fx.customer();
    const orgId = await fx.organization({ [customerId]: 'admin' });
    await fx.subscription({ organizationId: orgId }, team, 'active');
    const verifier = remoteVerifier(appId);

    const fromSession = await verifier.verify(await tokenOf(appId, await fx.session(customerId, orgId)));
    expect(fromSession).toMatchObject({
      sub: customerId,
      org: orgId,
      org_role: 'admin',
      plan: { id: 'team', name: 'Team' },
      ent: { seats: 20 },
    });

    const fromKey = await verifier.verify(await tokenOf(appId, apiKey, { organizationId: orgId }));
    expect(fromKey).toMatchObject({ sub: orgId, org: orgId, ent: { seats: 20 } });
    expect(fromKey).not.toHaveProperty('org_role');

    const personal = await verifier.verify(await tokenOf(appId, apiKey, { customerId }));
    expect(personal).toMatchObject({ sub: customerId, plan: null, ent: {} });
    expect(personal).not.toHaveProperty('org');
  });

  it("uses the app's entitlementTokenTtlSeconds and refuses one outside 30–3600", async () => {
    const { appId, apiKey, fx } = await newApp({ entitlementTokenTtlSeconds: 60 });
    const customerId = await fx.customer();
    const payload = await remoteVerifier(appId).verify(await tokenOf(appId, apiKey, { customerId }));
    expect(payload.exp! - payload.iat!).toBe(60);
    await expect(
      admin(() => server.services.apps.updateAppSettings(ADMIN, appId, { entitlementTokenTtlSeconds: 29 })),
    ).rejects.toThrow('must be at least 30 seconds');
  });

  it('answers a repeat with the same claims within a tenth of the lifetime with the token it signed', async () => {
    const { appId, apiKey, fx } = await newApp({ entitlementTokenTtlSeconds: 100 });
    const customerId = await fx.customer();
    const otherCustomerId = await fx.customer();
    const start = clock.now().getTime();
    const first = await issue(appId, apiKey, { customerId });
    expect(first.status).toBe(200);
    try {
      clock.set(new Date(start + 9_999));
      const repeat = await issue(appId, apiKey, { customerId });
      expect(repeat.status).toBe(200);
      expect(repeat.body).toEqual(first.body);
      // Other claims (another subject) are signed for themselves.
      const other = await remoteVerifier(appId).verify(
        await tokenOf(appId, apiKey, { customerId: otherCustomerId }),
        new Date(start + 9_999),
      );
      expect(other.sub).toBe(otherCustomerId);

      clock.set(new Date(start + 10_000));
      const fresh = await issue(appId, apiKey, { customerId });
      expect(fresh.status).toBe(200);
      expect(fresh.body.token).not.toBe(first.body.token);
      const payload = await remoteVerifier(appId).verify(fresh.body.token, new Date(start + 10_000));
      expect(payload.iat).toBe(Math.floor((start + 10_000) / 1000));
      expect(new Date(fresh.body.expiresAt).getTime()).toBe((payload.iat! + 100) * 1000);
    } finally {
      clock.set(new Date(start));
    }
  });

  it("answers 404 to another app's API key and 401 to another app's session", async () => {
    const a = await newApp();
    const b = await newApp();
    const customerId = await b.fx.customer();
    const byKey = await issue(a.appId, b.apiKey, { customerId });
    expect(byKey.status).toBe(404);
    const bySession = await issue(a.appId, await b.fx.session(customerId));
    expect(bySession.status).toBe(401);
    const anonymous = await server.http.post(`/v1/apps/${a.appId}/auth/entitlement-token`);
    expect(anonymous.status).toBe(401);
  });
});

describe('entitlement version (ev)', () => {
  it('rises with a subscription change and with a plan edit, and the next token carries the change', async () => {
    const { appId, apiKey, fx } = await newApp();
    const free = await fx.plan('free', { projects: 1 }, { isDefault: true });
    const pro = await fx.plan('pro', { projects: 50 });
    const customerId = await fx.customer();
    const subscriptionId = await fx.subscription({ customerId }, free, 'active');
    const verifier = remoteVerifier(appId);
    const first = await verifier.verify(await tokenOf(appId, apiKey, { customerId }));
    expect(first.ent).toEqual({ projects: 1 });

    await fx.setSubscription(subscriptionId, { planId: pro });
    const upgraded = await eventually(
      async () => {
        const p = await verifier.verify(await tokenOf(appId, apiKey, { customerId }));
        return (p.ev as number) > (first.ev as number) ? p : undefined;
      },
      { what: 'a token with a newer ev after the upgrade' },
    );
    expect(upgraded.ent).toEqual({ projects: 50 });
    expect(upgraded.plan).toEqual({ id: 'pro', name: 'Pro' });

    await fx.setPlanFeatures(pro, { projects: 100 });
    const edited = await eventually(
      async () => {
        const p = await verifier.verify(await tokenOf(appId, apiKey, { customerId }));
        return (p.ev as number) > (upgraded.ev as number) ? p : undefined;
      },
      { what: 'a token with a newer ev after the plan edit' },
    );
    expect(edited.ent).toEqual({ projects: 100 });
  });
});

describe('refused tokens', () => {
  it('refuses an expired token, another app’s token, an unknown kid and a tampered token', async () => {
    const { appId, apiKey, fx } = await newApp();
    const other = await newApp();
    const customerId = await fx.customer();
    const verifier = remoteVerifier(appId);
    const token = await tokenOf(appId, apiKey, { customerId });
    await verifier.verify(token);

    // Expired: five minutes and a second later.
    await expect(verifier.verify(token, new Date(clock.now().getTime() + 301_000))).rejects.toMatchObject({
      code: 'ERR_JWT_EXPIRED',
    });

    // Another app's token: its kid is not in this app's JWKS, and with the other app's keys the audience differs.
    const foreign = await tokenOf(other.appId, other.apiKey, { customerId: await other.fx.customer() });
    await expect(verifier.verify(foreign)).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
    const otherKeys = createRemoteJWKSet(jwksUrl(other.appId));
    await expect(
      jwtVerify(foreign, otherKeys, { audience: appId, currentDate: clock.now() }),
    ).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });

    // Tampered: the payload changed, the signature kept.
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, ent: { admin: true } })).toString('base64url');
    await expect(verifier.verify(`${header}.${forged}.${signature}`)).rejects.toMatchObject({
      code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    });

    // Unknown kid: the header names a key the JWKS never had.
    const otherHeader = Buffer.from(
      JSON.stringify({ ...decodeProtectedHeader(token), kid: 'etk_unknown' }),
    ).toString('base64url');
    await expect(verifier.verify(`${otherHeader}.${payload}.${signature}`)).rejects.toMatchObject({
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });
  });
});

describe('GET /v1/apps/:appId/.well-known/jwks.json', () => {
  it('is public, cacheable and open to any origin; 404 for an unknown app', async () => {
    const { appId, apiKey, fx } = await newApp();
    await tokenOf(appId, apiKey, { customerId: await fx.customer() });
    const res = await server.http
      .get(`/v1/apps/${appId}/.well-known/jwks.json`)
      .set('origin', 'https://somewhere.example');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.body.keys).toHaveLength(1);
    expect(Object.keys(res.body.keys[0]).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);

    const preflight = await server.http
      .options(`/v1/apps/${appId}/.well-known/jwks.json`)
      .set('origin', 'https://somewhere.example')
      .set('access-control-request-method', 'GET');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');

    const unknown = await server.http.get('/v1/apps/app_unknown/.well-known/jwks.json');
    expect(unknown.status).toBe(404);
  });

  it('keeps private keys unreadable in a dump of the table', async () => {
    const { appId, apiKey, fx } = await newApp();
    await tokenOf(appId, apiKey, { customerId: await fx.customer() });
    const rows = await server.deps.orm.em
      .fork()
      .getConnection()
      .execute<{ row: string; sealed: string }[]>(
        `select row_to_json(k)::text as row, k.private_key_sealed as sealed
           from entitlement_signing_key k where k.app_id = ?`,
        [appId],
      );
    expect(rows).toHaveLength(1);
    const { row, sealed } = rows[0]!;
    expect(row).toContain(`"app_id":"${appId}"`);
    const privateJwk = JSON.parse(new SecretBox(server.deps.config.webhooks.secretKey).open(sealed));
    expect(typeof privateJwk.d).toBe('string');
    expect(row).not.toContain(privateJwk.d);
    expect(row).not.toMatch(/\\?"d\\?":/);
  });
});

describe('rotation and revocation', () => {
  it('walks a rotation with a verifier that caches the JWKS, then a revocation', async () => {
    const { appId, apiKey, fx } = await newApp();
    const customerId = await fx.customer();
    const verifier = remoteVerifier(appId);
    const start = clock.now().getTime();
    const at = (ms: number) => new Date(start + ms);
    try {
      const a = await tokenOf(appId, apiKey, { customerId });
      const k1 = decodeProtectedHeader(a).kid;
      await verifier.verify(a);
      expect(verifier.fetches()).toBe(1);

      const rotated = await admin(() => server.services.entitlementTokens.rotate(ADMIN, appId));
      const k2 = rotated.kid;
      expect(rotated.signsFrom.getTime()).toBe(start + 10 * 60_000);
      const jwks = async () =>
        (
          (await server.http.get(`/v1/apps/${appId}/.well-known/jwks.json`)).body.keys as { kid: string }[]
        ).map((k) => k.kid);
      expect(await jwks()).toEqual([k1, k2]);

      // Within the grace the old key still signs; the verifier's cache still verifies it.
      clock.set(at(5 * 60_000));
      const b = await tokenOf(appId, apiKey, { customerId });
      expect(decodeProtectedHeader(b).kid).toBe(k1);
      await verifier.verify(b);
      expect(verifier.fetches()).toBe(1);

      // Its cache refreshes within the grace (jose's age is 10 minutes) and then sees the next key.
      await verifier.keys.reload();
      expect(verifier.fetches()).toBe(2);

      // After the grace the new key signs; the cached set verifies it without a fetch, and b (while valid).
      clock.set(at(10 * 60_000 + 1000));
      const c = await tokenOf(appId, apiKey, { customerId });
      expect(decodeProtectedHeader(c).kid).toBe(k2);
      await verifier.verify(c);
      await verifier.verify(b, at(6 * 60_000));
      expect(verifier.fetches()).toBe(2);

      // The old key leaves once no token it signed can be valid (longest lifetime + clock tolerance).
      clock.set(at(10 * 60_000 + 3660_000 + 1000));
      expect(await jwks()).toEqual([k2]);

      // Revoking the signing key removes it at once; the next token is signed by a new key.
      const revoked = await admin(() => server.services.entitlementTokens.revoke(ADMIN, appId, k2));
      expect(revoked.revokedAt).not.toBeNull();
      expect(await jwks()).toEqual([]);
      const d = await tokenOf(appId, apiKey, { customerId });
      const k3 = decodeProtectedHeader(d).kid;
      expect([k1, k2]).not.toContain(k3);
      expect(await jwks()).toEqual([k3]);
      await verifier.keys.reload();
      await verifier.verify(d);
      // c checked at a moment it is still valid: only its revoked key can refuse it (checked now, it is also
      // expired, and a revoked key still published would show as JWTExpired instead).
      await expect(verifier.verify(c, at(10 * 60_000 + 2000))).rejects.toMatchObject({
        code: 'ERR_JWKS_NO_MATCHING_KEY',
      });
    } finally {
      clock.set(new Date(start));
    }
  });

  it('is for the admin token only, over GraphQL', async () => {
    const { appId, apiKey } = await newApp();
    const rotate = `mutation($appId: ID!) { rotateEntitlementSigningKey(appId: $appId) { kid signsFrom } }`;
    const denied = await server.graphql(rotate, { appId }, apiKey);
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const list = `query($appId: ID!) { entitlementSigningKeys(appId: $appId) { kid } }`;
    const revoke = `mutation($appId: ID!, $kid: ID!) { revokeEntitlementSigningKey(appId: $appId, kid: $kid) { kid revokedAt } }`;
    const token = server.deps.adminToken;
    const done = await server.graphql(rotate, { appId }, token);
    expect(done.body.data.rotateEntitlementSigningKey.kid).toMatch(/^etk_/);
    const keys = await server.graphql(list, { appId }, token);
    expect(keys.body.data.entitlementSigningKeys).toHaveLength(1);
    const gone = await server.graphql(
      revoke,
      { appId, kid: done.body.data.rotateEntitlementSigningKey.kid },
      token,
    );
    expect(gone.body.data.revokeEntitlementSigningKey.revokedAt).toEqual(expect.any(String));
  });
});
