import { createAuthApp, uniqueEmail } from '../helpers/auth-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { type MailSink, startMailSink } from '../helpers/mail-sink.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

function waitForMessages(server: TestServer, to: string): Promise<any[]> {
  return eventually(
    async () => {
      const res = await server.http.get('/dev/mailbox.json');
      const mine = res.body.messages.filter((m: { to: string }) => m.to === to);
      return mine.length > 0 ? mine : undefined;
    },
    { what: `an e-mail to ${to}`, timeoutMs: 5000 },
  );
}

describe('dev mailbox (no SMTP_URL)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('lists each message as JSON and HTML, with a plain-text and an HTML part, never cached', async () => {
    const { appId } = await createAuthApp(server, {
      name: 'Shop <b>&</b> Co',
      allowedCallbackUrls: 'https://app.example.com/*',
    });
    const email = uniqueEmail('mailbox');
    await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.com/cb' })
      .expect(200);

    const [message] = await waitForMessages(server, email);
    expect(message).toEqual({
      id: expect.any(String),
      from: 'Tollgate <no-reply@tollgate.localhost>',
      to: email,
      subject: 'Sign in to Shop <b>&</b> Co',
      text: expect.stringContaining(`/v1/apps/${appId}/auth/verify?token=tg_ml_`),
      html: expect.stringContaining('Sign in to Shop &lt;b&gt;&amp;&lt;/b&gt; Co'),
      createdAt: expect.any(String),
    });

    const page = await server.http.get('/dev/mailbox');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'");
    expect(page.text).toContain(email);
    expect(page.text).toContain('Sign in to Shop &lt;b&gt;&amp;&lt;/b&gt; Co');
    expect(page.text).not.toContain('<b>&</b>');
    const link = /https?:\/\/\S+/.exec(message.text)![0];
    expect(page.text).toContain(`<a href="${link.replace(/&/g, '&amp;')}">`);
  });
});

describe('with SMTP_URL', () => {
  let sink: MailSink;
  let server: TestServer;
  beforeAll(async () => {
    sink = await startMailSink();
    server = await startTestServer({ env: { SMTP_URL: sink.url, MAIL_FROM: 'Login <login@example.net>' } });
  });
  afterAll(async () => {
    await server.close();
    await sink.close();
  });

  it('sends over SMTP to exactly one recipient, with text and HTML parts, and has no dev mailbox', async () => {
    const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
    const email = uniqueEmail('smtp');
    await server.http
      .post(`/v1/apps/${appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.com/cb' })
      .expect(200);
    const mail = await sink.waitFor((m) => m.rcptTo.includes(email));
    expect(mail.rcptTo).toEqual([email]);
    expect(mail.parsed.to).toMatchObject({ value: [{ address: email, name: '' }] });
    expect(mail.parsed.cc).toBeUndefined();
    expect(mail.parsed.bcc).toBeUndefined();
    expect(mail.parsed.from?.value).toEqual([{ name: 'Login', address: 'login@example.net' }]);
    expect(mail.parsed.text).toContain(`/v1/apps/${appId}/auth/verify?token=tg_ml_`);
    expect(mail.parsed.html).toContain(`/v1/apps/${appId}/auth/verify?token=tg_ml_`);

    expect((await server.http.get('/dev/mailbox')).status).toBe(404);
    expect((await server.http.get('/dev/mailbox.json')).status).toBe(404);
  });
});

describe('in production', () => {
  it('has no dev mailbox (production requires SMTP_URL)', async () => {
    const sink = await startMailSink();
    const server = await startTestServer({
      env: {
        NODE_ENV: 'production',
        PUBLIC_BASE_URL: 'https://tollgate.example.com',
        SMTP_URL: sink.url,
        MAIL_FROM: 'Login <login@example.com>',
        WEBHOOK_SECRET_KEY: 'dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE=',
        STRIPE_SECRET_KEY: 'sk_test_unused',
        STRIPE_WEBHOOK_SECRET: 'whsec_unused',
        TRUST_PROXY: 'loopback',
      },
    });
    try {
      expect((await server.http.get('/dev/mailbox')).status).toBe(404);
      expect((await server.http.get('/dev/mailbox.json')).status).toBe(404);
    } finally {
      await server.close();
      await sink.close();
    }
  });
});
