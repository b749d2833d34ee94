import { createAuthApp } from '../helpers/auth-fixtures.js';
import { firstLink, type MailSink, startMailSink } from '../helpers/mail-sink.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PUBLIC_BASE_URL = 'https://auth.tollgate.test';

let sink: MailSink;
let server: TestServer;
beforeAll(async () => {
  sink = await startMailSink();
  server = await startTestServer({
    env: {
      SMTP_URL: sink.url,
      MAIL_FROM: 'Tollgate <login@tollgate.test>',
      PUBLIC_BASE_URL,
    },
  });
});
afterAll(async () => {
  await server.close();
  await sink.close();
});

/** The e-mailed link points at PUBLIC_BASE_URL; the test opens the same path on the running server. */
function onServer(link: string): string {
  const url = new URL(link);
  return `${url.pathname}${url.search}`;
}

describe('magic-link login, end to end, as an app does it', () => {
  it('requests a link, reads the e-mail over SMTP, follows it, verifies the token and reads the session', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = `e2e-${Date.now()}@example.com`;

    const requested = await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.com/auth/callback?next=%2Fbilling' });
    expect(requested.status).toBe(200);
    expect(requested.body).toEqual({ success: true });

    const mail = await sink.waitFor((m) => m.rcptTo.includes(email));
    expect(mail.rcptTo).toEqual([email]);
    expect(mail.parsed.from?.value).toEqual([{ name: 'Tollgate', address: 'login@tollgate.test' }]);
    expect(mail.parsed.subject).toMatch(/^Sign in to /);
    expect(typeof mail.parsed.html).toBe('string');
    const link = firstLink(mail);
    expect(link).toMatch(
      new RegExp(
        `^${PUBLIC_BASE_URL}/v1/apps/${appId}/auth/verify\\?token=tg_ml_[A-Za-z0-9_-]{43}&redirect=true$`,
      ),
    );
    expect(mail.parsed.html as string).toContain(link.replace(/&/g, '&amp;'));

    const opened = await server.http.get(onServer(link)).redirects(0);
    expect(opened.status).toBe(302);
    expect(opened.headers['cache-control']).toBe('no-store');
    expect(opened.headers['referrer-policy']).toBe('no-referrer');
    const callback = new URL(opened.headers.location as string);
    expect(`${callback.origin}${callback.pathname}`).toBe('https://app.example.com/auth/callback');
    expect(callback.searchParams.get('next')).toBe('/billing');
    const token = callback.searchParams.get('token');
    expect(token).toBe(new URL(link).searchParams.get('token'));

    const verified = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_[A-Za-z0-9_-]{43}$/),
      customer: { id: expect.stringMatching(/^cus_/), email, name: null, metadata: {} },
      entitlements: { planName: null, features: {} },
    });

    const session = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${verified.body.sessionToken}`);
    expect(session.status).toBe(200);
    expect(session.body).toEqual({
      customer: verified.body.customer,
      entitlements: { planName: null, features: {} },
    });
  });

  it('says in the e-mail what is true: the link opens until it is used to sign in, within its lifetime', async () => {
    const { appId } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://app.example.com/*',
      magicLinkExpiryMinutes: 20,
    });
    const email = `twice-${Date.now()}@example.com`;
    const requested = await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.com/auth/callback' });
    expect(requested.status).toBe(200);
    const mail = await sink.waitFor((m) => m.rcptTo.includes(email));
    const promise = 'You can open the link until you have signed in with it, for 20 minutes at most.';
    expect(mail.parsed.text).toContain(promise);
    expect(mail.parsed.html as string).toContain(promise);
    expect(`${mail.parsed.text} ${mail.parsed.html}`).not.toContain('works once');

    const link = onServer(firstLink(mail));
    for (const _ of [1, 2]) expect((await server.http.get(link).redirects(0)).status).toBe(302);
    const token = new URL(firstLink(mail)).searchParams.get('token');
    expect((await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token })).status).toBe(200);
    const afterUse = await server.http.get(link).redirects(0);
    expect({ status: afterUse.status, body: afterUse.body }).toEqual({
      status: 401,
      body: { statusCode: 401, message: 'Invalid, used or expired magic link token', error: 'Unauthorized' },
    });
  });

  it('links to the custom verification URL, whose redirect back to Tollgate completes the login', async () => {
    const { appId } = await createAuthApp(server, {
      allowedCallbackUrls: 'https://*.example.org/*',
      customVerificationUrl: 'https://www.example.org/login/verify?lang=en',
    });
    const email = `custom-${Date.now()}@example.com`;
    await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.org/done' })
      .expect(200);

    const link = new URL(firstLink(await sink.waitFor((m) => m.rcptTo.includes(email))));
    expect(`${link.origin}${link.pathname}`).toBe('https://www.example.org/login/verify');
    expect(link.searchParams.get('lang')).toBe('en');
    expect(link.searchParams.get('appId')).toBe(appId);
    const token = link.searchParams.get('token')!;
    expect(token).toMatch(/^tg_ml_/);

    // What the app's endpoint does: redirect to Tollgate's verify URL with redirect=true.
    const opened = await server.http
      .get(`/v1/apps/${appId}/auth/verify`)
      .query({ token, redirect: 'true' })
      .redirects(0);
    expect(opened.status).toBe(302);
    expect(opened.headers.location).toBe(`https://app.example.org/done?token=${token}`);

    const verified = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
    expect(verified.status).toBe(200);
    expect(verified.body.customer.email).toBe(email);
  });
});
