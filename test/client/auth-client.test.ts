import { TollgateAuth, TollgateError } from '@tollgate/client';
import { uniqueEmail } from '../helpers/auth-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `TollgateAuth` of @tollgate/client against a real running Tollgate (dev mailbox): login by magic link,
 * which redirect URL a link leads to, the session cache on a controllable clock, organizations, sign-out.
 */
let server: TestServer;
let appId: string;
let apiKey: string;

const CALLBACK = 'https://shop.example.com/auth/callback';
const DEV_CALLBACK = 'http://localhost:5173/callback';

beforeAll(async () => {
  server = await startTestServer();
  ({ appId, apiKey } = await server.createApp({
    allowedCallbackUrls: `${CALLBACK}\nhttps://staging.example.com/*`,
    organizationsEnabled: true,
  }));
  const free = await server.graphql(
    `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
    { appId, input: { id: 'free', name: 'Free', features: { export: true }, isDefault: true } },
    server.adminToken,
  );
  expect(free.body.errors).toBeUndefined();
});

afterAll(async () => {
  await server?.close();
});

/** A fetch that counts the requests it sends to Tollgate. */
function countingFetch() {
  const calls: string[] = [];
  const counted: typeof fetch = (input, init) => {
    calls.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
  return { calls, fetch: counted };
}

/** Where the newest magic link e-mailed to `to` leads: its token and the address the link redirects to. */
async function openNewestLink(to: string): Promise<{ token: string; redirectsTo: string }> {
  const link = await eventually(
    async () => {
      const res = await server.http.get('/dev/mailbox.json');
      const mail = (res.body.messages as { to: string; text: string }[]).find((m) => m.to === to);
      return mail ? /https?:\/\/\S+/.exec(mail.text)![0] : undefined;
    },
    { what: `a magic link e-mailed to ${to}`, timeoutMs: 5000 },
  );
  // The link names PUBLIC_BASE_URL (localhost); the test server listens on 127.0.0.1.
  const { pathname, search } = new URL(link);
  const opened = await fetch(`${server.url}${pathname}${search}`, { redirect: 'manual' });
  expect(opened.status).toBe(302);
  const location = new URL(opened.headers.get('location')!);
  const token = location.searchParams.get('token')!;
  location.searchParams.delete('token');
  return { token, redirectsTo: location.toString() };
}

async function failure(call: Promise<unknown>): Promise<TollgateError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TollgateError)) throw new Error(`expected a TollgateError, got ${String(error)}`);
  return error;
}

/** A logged-in customer: magic link sent by the client, opened, verified. */
async function login(auth: TollgateAuth, email = uniqueEmail('login')) {
  await auth.sendMagicLink(email, { redirectUrl: CALLBACK });
  const { token } = await openNewestLink(email);
  return auth.verify(token);
}

describe('TollgateAuth', () => {
  it('logs a customer in: magic link, verify, session, feature check', async () => {
    const auth = new TollgateAuth({ appId, baseUrl: server.url });
    const email = uniqueEmail('ada');
    expect(await auth.sendMagicLink(email, { redirectUrl: CALLBACK })).toEqual({ success: true });
    const { token, redirectsTo } = await openNewestLink(email);
    expect(redirectsTo).toBe(CALLBACK);
    const verified = await auth.verify(token);
    expect(verified).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_/),
      customer: { id: expect.stringMatching(/^cus_/), email, name: null, metadata: {} },
      entitlements: { planName: 'Free', features: { export: true } },
    });
    expect(await auth.getSession(verified.sessionToken)).toEqual({
      customer: verified.customer,
      entitlements: { planName: 'Free', features: { export: true } },
    });
    expect(await auth.check(verified.sessionToken, 'export')).toEqual({
      feature: 'export',
      allowed: true,
      value: true,
    });
    expect(await auth.check(verified.sessionToken, 'sso')).toEqual({
      feature: 'sso',
      allowed: false,
      value: null,
    });
    const reused = await failure(auth.verify(token));
    expect(reused).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
  });

  describe('the redirect of a magic link', () => {
    it('is the explicit redirectUrl, even when a dev default is set', async () => {
      const auth = new TollgateAuth({
        appId,
        baseUrl: server.url,
        devCallbackUrl: DEV_CALLBACK,
        production: false,
      });
      const email = uniqueEmail('explicit');
      await auth.sendMagicLink(email, { redirectUrl: 'https://staging.example.com/in' });
      expect((await openNewestLink(email)).redirectsTo).toBe('https://staging.example.com/in');
    });

    it('is devCallbackUrl when none is passed, outside production', async () => {
      const auth = new TollgateAuth({
        appId,
        baseUrl: server.url,
        devCallbackUrl: DEV_CALLBACK,
        production: false,
      });
      const email = uniqueEmail('dev');
      await auth.sendMagicLink(email);
      expect((await openNewestLink(email)).redirectsTo).toBe(DEV_CALLBACK);
    });

    it('is required in production: a TollgateError and no request at all', async () => {
      const { calls, fetch } = countingFetch();
      const auth = new TollgateAuth({
        appId,
        baseUrl: server.url,
        devCallbackUrl: DEV_CALLBACK,
        production: true,
        fetch,
      });
      const refused = await failure(auth.sendMagicLink(uniqueEmail('prod')));
      expect(refused.message).toBe(
        'redirectUrl is required in production (devCallbackUrl is used only in development)',
      );
      expect(calls).toEqual([]);
      const email = uniqueEmail('prod-explicit');
      await auth.sendMagicLink(email, { redirectUrl: CALLBACK });
      expect(calls).toEqual([`POST /v1/apps/${appId}/auth/magic-link`]);
      expect((await openNewestLink(email)).redirectsTo).toBe(CALLBACK);
    });

    it('follows NODE_ENV by default', async () => {
      const previous = process.env.NODE_ENV;
      process.env.NODE_ENV = 'production';
      try {
        const auth = new TollgateAuth({ appId, baseUrl: server.url, devCallbackUrl: DEV_CALLBACK });
        expect((await failure(auth.sendMagicLink(uniqueEmail('env')))).statusCode).toBe(0);
      } finally {
        process.env.NODE_ENV = previous;
      }
    });

    it('is refused by Tollgate (400) when it matches no allowed pattern', async () => {
      const auth = new TollgateAuth({ appId, baseUrl: server.url });
      const refused = await failure(
        auth.sendMagicLink(uniqueEmail('evil'), { redirectUrl: 'https://evil.example.net/' }),
      );
      expect(refused).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    });
  });

  describe('the session cache', () => {
    it('answers a revoked session from the cache within sessionCacheTTL, then fails with 401', async () => {
      let now = 1_000_000;
      const { calls, fetch } = countingFetch();
      const cached = new TollgateAuth({
        appId,
        baseUrl: server.url,
        sessionCacheTTL: 30,
        now: () => now,
        fetch,
      });
      const { sessionToken, customer } = await login(new TollgateAuth({ appId, baseUrl: server.url }));
      const first = await cached.getSession(sessionToken);
      expect(first.customer.id).toBe(customer.id);

      // Revoked through another client instance: this one's cache does not know.
      await new TollgateAuth({ appId, baseUrl: server.url }).signOut(sessionToken);
      now += 29_000;
      expect(await cached.getSession(sessionToken)).toEqual(first);
      expect(calls.filter((c) => c.endsWith('/auth/session'))).toHaveLength(1);

      now += 1_000;
      const expired = await failure(cached.getSession(sessionToken));
      expect(expired).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
      expect(calls.filter((c) => c.endsWith('/auth/session'))).toHaveLength(2);
    });

    it('does not cache by default (sessionCacheTTL 0)', async () => {
      const { calls, fetch } = countingFetch();
      const auth = new TollgateAuth({ appId, baseUrl: server.url, fetch });
      const { sessionToken } = await login(new TollgateAuth({ appId, baseUrl: server.url }));
      await auth.getSession(sessionToken);
      await auth.getSession(sessionToken);
      expect(calls.filter((c) => c.endsWith('/auth/session'))).toHaveLength(2);
    });

    it('is bounded: past maxCachedSessions the oldest entry is dropped', async () => {
      const { calls, fetch } = countingFetch();
      const auth = new TollgateAuth({
        appId,
        baseUrl: server.url,
        sessionCacheTTL: 60,
        maxCachedSessions: 1,
        fetch,
      });
      const plain = new TollgateAuth({ appId, baseUrl: server.url });
      const a = (await login(plain)).sessionToken;
      const b = (await login(plain)).sessionToken;
      await auth.getSession(a);
      await auth.getSession(a);
      await auth.getSession(b);
      await auth.getSession(a);
      expect(calls).toHaveLength(3);
    });

    it('drops the entry on signOut: the token fails at once', async () => {
      const auth = new TollgateAuth({ appId, baseUrl: server.url, sessionCacheTTL: 60 });
      const { sessionToken } = await login(auth);
      await auth.getSession(sessionToken);
      expect(await auth.signOut(sessionToken)).toEqual({ success: true });
      expect((await failure(auth.getSession(sessionToken))).statusCode).toBe(401);
      expect((await failure(auth.check(sessionToken, 'export'))).statusCode).toBe(401);
    });
  });

  it('switches to an organization: a new token whose session carries the organization; the old cache entry is dropped', async () => {
    const { calls, fetch } = countingFetch();
    const auth = new TollgateAuth({ appId, baseUrl: server.url, sessionCacheTTL: 60, fetch });
    const { sessionToken, customer } = await login(auth);
    const created = await server.http
      .post('/graphql')
      .set('authorization', `Bearer ${apiKey}`)
      .send({
        query: 'mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { id } }',
        variables: { input: { name: 'Acme', ownerCustomerId: customer.id } },
      });
    const organizationId = created.body.data.createOrganization.id as string;
    await auth.getSession(sessionToken);
    const switched = await auth.switchOrganization(sessionToken, organizationId);
    expect(switched).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_/),
      customer,
      entitlements: { planName: 'Free', features: { export: true } },
      organizationId,
      orgRole: 'owner',
    });
    expect(await auth.getSession(switched.sessionToken)).toMatchObject({ organizationId, orgRole: 'owner' });
    // The calling token stays valid, but its cached session was dropped: it is asked for again.
    const lookups = () => calls.filter((c) => c.endsWith('/auth/session')).length;
    const before = lookups();
    expect((await auth.getSession(sessionToken)).organizationId).toBeUndefined();
    expect(lookups()).toBe(before + 1);
    const notMember = await failure(auth.switchOrganization(sessionToken, 'org_unknown'));
    expect(notMember).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('refuses bad settings before sending anything', () => {
    expect(() => new TollgateAuth({ appId: '', baseUrl: server.url })).toThrow(TollgateError);
    expect(() => new TollgateAuth({ appId, baseUrl: 'localhost:4000' })).toThrow(/baseUrl/);
    expect(() => new TollgateAuth({ appId, baseUrl: server.url, sessionCacheTTL: -1 })).toThrow(
      /sessionCacheTTL/,
    );
  });
});
