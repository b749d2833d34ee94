import { Writable } from 'node:stream';
import { createAuthApp, tokenFromDevMailbox, uniqueEmail } from '../helpers/auth-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Collects every log line the server writes. */
function logCollector(): { stream: Writable; text: () => string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return { stream, text: () => lines.join('') };
}

describe('tokens never reach the logs', () => {
  it('logs the whole login flow at debug level without the magic-link or session token', async () => {
    const logs = logCollector();
    const server: TestServer = await startTestServer({
      env: { LOG_LEVEL: 'debug' },
      logDestination: logs.stream,
    });
    try {
      const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
      const email = uniqueEmail();
      await server.http
        .post(`/v1/apps/${appId}/auth/magic-link`)
        .send({ email, redirectUrl: 'https://app.example.com/cb' })
        .expect(200);
      const token = await tokenFromDevMailbox(server, email);

      await server.http.get(`/v1/apps/${appId}/auth/verify?token=${token}&redirect=true`).expect(302);
      await server.http.get(`/v1/apps/${appId}/auth/verify?token=${token}`).expect(400);
      const verified = await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token }).expect(200);
      const sessionToken: string = verified.body.sessionToken;
      await server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token }).expect(401);
      await server.http
        .get(`/v1/apps/${appId}/auth/session`)
        .set('authorization', `Bearer ${sessionToken}`)
        .expect(200);

      await eventually(() => (logs.text().includes(`/v1/apps/${appId}/auth/session`) ? true : undefined), {
        what: 'the last request log line',
        timeoutMs: 5000,
      });
      const text = logs.text();
      expect(text).toContain('dev mailbox: new message');
      expect(text).toContain('token=%5Bredacted%5D');
      expect(text).not.toContain(token);
      expect(text).not.toContain(token.slice('tg_ml_'.length));
      expect(text).not.toContain(sessionToken);
    } finally {
      await server.close();
    }
  });

  it('logs a failed delivery without the message or its token', async () => {
    const logs = logCollector();
    // Nothing listens on port 9 of the loopback address: delivery fails at once.
    const server = await startTestServer({
      env: { SMTP_URL: 'smtp://127.0.0.1:9', LOG_LEVEL: 'info' },
      logDestination: logs.stream,
    });
    try {
      const { appId } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' });
      const res = await server.http
        .post(`/v1/apps/${appId}/auth/magic-link`)
        .send({ email: uniqueEmail(), redirectUrl: 'https://app.example.com/cb' });
      expect(res.status).toBe(200);
      await eventually(
        () => (logs.text().includes('magic-link e-mail could not be sent') ? true : undefined),
        {
          what: 'the delivery error',
          timeoutMs: 5000,
        },
      );
      expect(logs.text()).not.toContain('tg_ml_');
      expect(logs.text()).not.toContain('Sign in to');
    } finally {
      await server.close();
    }
  });
});
