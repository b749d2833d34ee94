import { createHash } from 'node:crypto';
import { ManualClock } from '../../src/core/clock.js';
import { createAuthApp, uniqueEmail } from '../helpers/auth-fixtures.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PUBLIC_BASE_URL = 'https://login.tollgate.example';
const CALLBACK = 'https://app.example.com/callback';

const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock, env: { PUBLIC_BASE_URL } });
});
afterAll(async () => {
  await server.close();
});

interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

async function mailbox(): Promise<Mail[]> {
  const res = await server.http.get('/dev/mailbox.json');
  expect(res.status).toBe(200);
  return res.body.messages;
}

/** Mail leaves after the response (off the request path): poll the dev mailbox until it arrives. */
function waitForMail(to: string, count = 1): Promise<Mail[]> {
  return eventually(
    async () => {
      const mine = (await mailbox()).filter((m) => m.to === to);
      return mine.length >= count ? mine : undefined;
    },
    { what: `${count} e-mail(s) to ${to}`, timeoutMs: 5000 },
  );
}

function tokenOf(mail: Mail): string {
  const link = /https?:\/\/\S+/.exec(mail.text)![0];
  return new URL(link).searchParams.get('token')!;
}

async function query<T>(sql: string, params: unknown[]): Promise<T[]> {
  return server.deps.orm.em.fork().getConnection().execute<T[]>(sql, params);
}

function requestLink(appId: string, email: string, redirectUrl = CALLBACK) {
  return server.http.post(`/v1/apps/${appId}/auth/magic-link`).send({ email, redirectUrl });
}

/** Requests a link for a new customer and returns the token from the e-mail. */
async function tokenFor(appId: string, email = uniqueEmail()): Promise<string> {
  await requestLink(appId, email).expect(200);
  const [mail] = await waitForMail(email);
  return tokenOf(mail!);
}

describe('POST /v1/apps/:appId/auth/magic-link', () => {
  it('answers 404 in the envelope for an unknown app on every auth endpoint', async () => {
    const paths = [
      ['post', '/v1/apps/app_unknown/auth/magic-link'],
      ['post', '/v1/apps/app_unknown/auth/verify'],
      ['get', '/v1/apps/app_unknown/auth/verify?token=x&redirect=true'],
      ['get', '/v1/apps/app_unknown/auth/session'],
    ] as const;
    for (const [method, path] of paths) {
      const res = await server.http[method](path).send({
        email: 'a@example.com',
        redirectUrl: CALLBACK,
        token: 'x',
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, message: 'App app_unknown not found', error: 'Not Found' });
    }
  });

  it('e-mails a known customer a link built from PUBLIC_BASE_URL, whatever Host the request names', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail('known');
    const res = await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .set('host', 'evil.example')
      .set('x-forwarded-host', 'evil.example')
      .send({ email, redirectUrl: CALLBACK });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });

    const [mail] = await waitForMail(email);
    const token = tokenOf(mail!);
    const link = `${PUBLIC_BASE_URL}/v1/apps/${appId}/auth/verify?token=${token}&redirect=true`;
    expect(mail!.text).toContain(link);
    expect(mail!.html).toContain(link.replace('&', '&amp;'));
    expect(mail!.text).not.toContain('evil.example');
    expect(mail!.html).not.toContain('evil.example');
  });

  it('creates the customer on first request when autoCreateCustomer is on', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail('New.Person');
    await requestLink(appId, email).expect(200);
    await waitForMail(email);
    const rows = await query<{ email: string }>('select email from customer where app_id = ?', [appId]);
    expect(rows).toEqual([{ email }]);
  });

  it('with autoCreateCustomer off, answers an unknown e-mail exactly like a known one and sends nothing', async () => {
    const { appId } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
      autoCreateCustomer: false,
    });
    const unknown = uniqueEmail('unknown');
    const known = uniqueEmail('known');
    await new Fixtures(server, appId).customer(known);

    const forUnknown = await requestLink(appId, unknown);
    const forKnown = await requestLink(appId, known);
    expect(forUnknown.status).toBe(forKnown.status);
    expect(forUnknown.body).toEqual(forKnown.body);
    expect(forUnknown.body).toEqual({ success: true });

    await waitForMail(known);
    expect((await mailbox()).filter((m) => m.to === unknown)).toEqual([]);
    expect(
      await query('select id from customer where app_id = ? and email_lower = ?', [appId, unknown]),
    ).toEqual([]);
  });

  it('refuses a redirect URL that matches no allowed pattern with 400, before any e-mail or token', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail();
    for (const redirectUrl of [
      'https://evil.net/',
      'https://app.example.com.evil.net/',
      'https://app.example.com@evil.net/',
      'http://app.example.com/',
      'javascript:alert(1)',
      '//evil.net/',
    ]) {
      const res = await requestLink(appId, email, redirectUrl);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400,
        message: 'redirectUrl: does not match any allowed callback URL of this app',
        error: 'Bad Request',
      });
    }
    expect(await query('select id from magic_link_token where app_id = ?', [appId])).toEqual([]);
    expect(await query('select id from customer where app_id = ?', [appId])).toEqual([]);
    expect((await mailbox()).filter((m) => m.to === email)).toEqual([]);
  });

  it('always accepts http://localhost callbacks, with or without a port, even with no patterns', async () => {
    const { appId } = await createAuthApp(server);
    await requestLink(appId, uniqueEmail(), 'http://localhost:3000/cb').expect(200);
    await requestLink(appId, uniqueEmail(), 'http://localhost/cb').expect(200);
    await requestLink(appId, uniqueEmail(), 'https://example.com/cb').expect(400);
  });

  it.each([
    ['a list of addresses', 'a@x.com,b@y.com'],
    ['a list with a semicolon', 'a@x.com;b@y.com'],
    ['a quoted local part containing @', '"a@b"@example.com'],
    ['a full-width at sign', 'user＠example.com'],
    ['CR/LF header injection', 'user@example.com\r\nBcc: victim@example.org'],
    ['a trailing newline', 'user@example.com\n'],
    ['HTML', '<script>alert(1)</script>@example.com'],
    ['a display name', 'User <user@example.com>'],
    ['no domain', 'user@'],
  ])('refuses %s as the e-mail with 400 and sends nothing', async (_label, email) => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const res = await requestLink(appId, email);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      statusCode: 400,
      message: 'email: must be a valid e-mail address',
      error: 'Bad Request',
    });
    expect(await query('select id from magic_link_token where app_id = ?', [appId])).toEqual([]);
  });

  it('requires email and redirectUrl and refuses unknown fields', async () => {
    const { appId } = await createAuthApp(server);
    const res = await server.http.post(`/v1/apps/${appId}/auth/magic-link`).send({ email: 'a@example.com' });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('redirectUrl: is required');
    const extra = await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email: 'a@example.com', redirectUrl: 'http://localhost/cb', cc: 'b@example.com' });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toBe('unknown field: cc');
  });
});

describe('abuse limit: 5 links per e-mail per 15 minutes', () => {
  it('answers the 6th request 429 with Retry-After, for a known and an unknown e-mail alike, and reopens later', async () => {
    const { appId } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
      autoCreateCustomer: false,
    });
    const known = uniqueEmail('known');
    await new Fixtures(server, appId).customer(known);
    const unknown = uniqueEmail('unknown');

    for (const email of [known, unknown]) {
      for (let i = 0; i < 5; i++) await requestLink(appId, email).expect(200, { success: true });
      const limited = await requestLink(appId, email);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({
        statusCode: 429,
        message: 'Too many magic links requested for this e-mail address, try again later',
        error: 'Too Many Requests',
      });
      expect(limited.headers['retry-after']).toBe('900');
    }
    // The limit is per address, and case does not make a new address.
    await requestLink(appId, known.toUpperCase()).expect(429);
    await requestLink(appId, uniqueEmail()).expect(200);
    expect(await waitForMail(known, 5)).toHaveLength(5);

    clock.advance(15 * 60 * 1000 + 1000);
    await requestLink(appId, known).expect(200);
    await requestLink(appId, unknown).expect(200);
  });

  it('lets exactly 5 of 8 concurrent requests for one address through', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail('burst');
    const statuses = (await Promise.all(Array.from({ length: 8 }, () => requestLink(appId, email)))).map(
      (r) => r.status,
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
  });
});

describe('magic-link tokens', () => {
  it('are 256-bit random values stored only as their SHA-256', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const token = await tokenFor(appId);
    expect(token).toMatch(/^tg_ml_[A-Za-z0-9_-]{43}$/);
    const rows = await query<{ token_hash: string }>(
      'select token_hash from magic_link_token where app_id = ?',
      [appId],
    );
    expect(rows).toEqual([{ token_hash: createHash('sha256').update(token).digest('hex') }]);
  });

  it('GET verify with redirect=true answers 302 to the callback with token, without consuming it', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail();
    await requestLink(appId, email, 'https://app.example.com/callback?state=abc').expect(200);
    const token = tokenOf((await waitForMail(email))[0]!);

    for (let i = 0; i < 2; i++) {
      const opened = await server.http
        .get(`/v1/apps/${appId}/auth/verify`)
        .query({ token, redirect: 'true' });
      expect(opened.status).toBe(302);
      expect(opened.headers.location).toBe(`https://app.example.com/callback?state=abc&token=${token}`);
      expect(opened.headers['cache-control']).toBe('no-store');
      expect(opened.headers['referrer-policy']).toBe('no-referrer');
    }
    await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token }).expect(200);
    const afterUse = await server.http
      .get(`/v1/apps/${appId}/auth/verify`)
      .query({ token, redirect: 'true' });
    expect(afterUse.status).toBe(401);
  });

  it('GET verify without redirect=true is 400; with a bad token 401', async () => {
    const { appId } = await createAuthApp(server);
    const noRedirect = await server.http.get(`/v1/apps/${appId}/auth/verify`).query({ token: 'tg_ml_x' });
    expect(noRedirect.status).toBe(400);
    expect(noRedirect.body.message).toMatch(/^redirect: must be true/);
    const bad = await server.http
      .get(`/v1/apps/${appId}/auth/verify`)
      .query({ token: 'tg_ml_x', redirect: 'true' });
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({
      statusCode: 401,
      message: 'Invalid, used or expired magic link token',
      error: 'Unauthorized',
    });
    expect(bad.headers['cache-control']).toBe('no-store');
  });

  it('POST verify consumes a token once: the second use is 401', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const token = await tokenFor(appId);
    const first = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
    expect(first.status).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.headers['referrer-policy']).toBe('no-referrer');
    const second = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
    expect(second.status).toBe(401);
    expect(second.body.message).toBe('Invalid, used or expired magic link token');
  });

  it('verify and the session lookup carry the entitlement version in a header, bodies unchanged', async () => {
    const { appId, apiKey } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
    });
    await new Fixtures(server, appId).plan('free', { seats: 1 }, { isDefault: true });
    const token = await tokenFor(appId);
    const verified = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
    expect(verified.status).toBe(200);
    expect(Object.keys(verified.body).sort()).toEqual(['customer', 'entitlements', 'sessionToken']);
    const ev = verified.headers['tollgate-entitlements-version'];
    expect(ev).toMatch(/^[1-9][0-9]*$/);
    const session = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${verified.body.sessionToken}`);
    expect(session.headers['tollgate-entitlements-version']).toBe(ev);
    const issued = await server.http
      .post(`/v1/apps/${appId}/auth/entitlement-token`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId: verified.body.customer.id });
    expect(issued.headers['tollgate-entitlements-version']).toBe(ev);
  });

  it('of 10 racing POST verify requests exactly one succeeds and exactly one session exists', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const token = await tokenFor(appId);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401, 401, 401, 401, 401, 401]);
    expect(await query('select id from session where app_id = ?', [appId])).toHaveLength(1);
  });

  it("expire after the app's magicLinkExpiryMinutes", async () => {
    const { appId } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
      magicLinkExpiryMinutes: 5,
    });
    const early = await tokenFor(appId);
    const late = await tokenFor(appId);
    clock.advance(5 * 60 * 1000 - 1000);
    await server.http
      .get(`/v1/apps/${appId}/auth/verify`)
      .query({ token: early, redirect: 'true' })
      .expect(302);
    await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token: early }).expect(200);
    clock.advance(2000);
    await server.http
      .get(`/v1/apps/${appId}/auth/verify`)
      .query({ token: late, redirect: 'true' })
      .expect(401);
    await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token: late }).expect(401);
  });

  it('a token of app A is refused by app B', async () => {
    const a = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const b = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const token = await tokenFor(a.appId);
    await server.http.post(`/v1/apps/${b.appId}/auth/verify`).send({ token }).expect(401);
    await server.http.get(`/v1/apps/${b.appId}/auth/verify`).query({ token, redirect: 'true' }).expect(401);
    await server.http.post(`/v1/apps/${a.appId}/auth/verify`).send({ token }).expect(200);
  });

  it('does not redirect to a callback the app no longer allows', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const token = await tokenFor(appId);
    await server.deps.orm.em
      .fork()
      .getConnection()
      .execute(`update app set allowed_callback_urls = 'https://other.example.com/*' where id = ?`, [appId]);
    const res = await server.http.get(`/v1/apps/${appId}/auth/verify`).query({ token, redirect: 'true' });
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });
});

describe('sessions', () => {
  async function login(appId: string, email = uniqueEmail()) {
    const token = await tokenFor(appId, email);
    const res = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
    expect(res.status).toBe(200);
    return res.body as { sessionToken: string; customer: { id: string; email: string } };
  }

  it('verify returns the session token, customer and entitlements; session returns the Session object', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    await new Fixtures(server, appId).plan('free', { seats: 1, export: false }, { isDefault: true });
    const email = uniqueEmail();
    const body = await login(appId, email);
    expect(body).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_[A-Za-z0-9_-]{43}$/),
      customer: { id: expect.stringMatching(/^cus_/), email, name: null, metadata: {} },
      entitlements: { planName: 'Free', features: { seats: 1, export: false } },
    });
    const session = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${body.sessionToken}`);
    expect(session.status).toBe(200);
    expect(session.headers['cache-control']).toBe('no-store');
    expect(session.body).toEqual({
      customer: body.customer,
      entitlements: { planName: 'Free', features: { seats: 1, export: false } },
    });
    const [row] = await query<{ token_hash: string }>(
      'select token_hash from session where customer_id = ?',
      [body.customer.id],
    );
    expect(row!.token_hash).toBe(createHash('sha256').update(body.sessionToken).digest('hex'));
  });

  it('a session token of app A used on app B is 401; an API key is 403; nothing is 401', async () => {
    const a = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const b = await createAuthApp(server);
    const { sessionToken } = await login(a.appId);
    const crossApp = await server.http
      .get(`/v1/apps/${b.appId}/auth/session`)
      .set('authorization', `Bearer ${sessionToken}`);
    expect(crossApp.status).toBe(401);
    expect(crossApp.body.error).toBe('Unauthorized');
    const apiKey = await server.http
      .get(`/v1/apps/${a.appId}/auth/session`)
      .set('authorization', `Bearer ${a.apiKey}`);
    expect(apiKey.status).toBe(403);
    const none = await server.http.get(`/v1/apps/${a.appId}/auth/session`);
    expect(none.status).toBe(401);
  });

  it('shows organizationId, orgRole and the organization entitlements only in an organization context', async () => {
    const { appId } = await createAuthApp(server, { organizationsEnabled: true });
    const fixtures = new Fixtures(server, appId);
    const customerId = await fixtures.customer();
    await fixtures.plan('free', { seats: 1 }, { isDefault: true });
    const teamPlan = await fixtures.plan('team', { seats: 25 });
    const organizationId = await fixtures.organization({ [customerId]: 'admin' });
    await fixtures.subscription({ organizationId }, teamPlan, 'active');

    const own = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${await fixtures.session(customerId)}`);
    expect(own.status).toBe(200);
    expect(Object.keys(own.body).sort()).toEqual(['customer', 'entitlements']);
    expect(own.body.entitlements).toEqual({ planName: 'Free', features: { seats: 1 } });

    const inOrganization = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${await fixtures.session(customerId, organizationId)}`);
    expect(inOrganization.status).toBe(200);
    expect(inOrganization.body).toEqual({
      customer: { id: customerId, email: expect.any(String), name: null, metadata: {} },
      entitlements: { planName: 'Team', features: { seats: 25 } },
      organizationId,
      orgRole: 'admin',
    });
  });

  it("lasts the app's sessionTtlSeconds", async () => {
    const { appId } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
      sessionTtlSeconds: 3600,
    });
    const { sessionToken } = await login(appId);
    clock.advance(3600 * 1000 - 1000);
    await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${sessionToken}`)
      .expect(200);
    clock.advance(2000);
    await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${sessionToken}`)
      .expect(401);
  });

  it('defaults to 30 days', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const { customer } = await login(appId);
    const [row] = await query<{ created_at: Date; expires_at: Date }>(
      'select created_at, expires_at from session where customer_id = ?',
      [customer.id],
    );
    expect(new Date(row!.expires_at).getTime() - new Date(row!.created_at).getTime()).toBe(
      30 * 24 * 3600 * 1000,
    );
  });
});
