import { randomBytes } from 'node:crypto';
import type { Clock } from '../../src/core/clock.js';
import { createScratchDatabase, dropDatabase } from '../../src/infra/database-admin.js';
import { type MailSink, startMailSink } from './mail-sink.js';
import { startTestServer, type TestServer } from './server.js';

/**
 * Operators belong to a whole Tollgate, not to an app, so a test of them (who is the last owner, who
 * sees what) needs a database of its own: each OperatorServer runs on a scratch database and a real SMTP
 * sink, and drops the database when closed.
 */
export interface OperatorServer {
  readonly server: TestServer;
  readonly mail: MailSink;
  /** This server's own database, for CLI commands run against it. */
  readonly databaseUrl: string;
  /** Adds an operator with the admin token; returns its id. */
  addOperator(email: string, role: 'owner' | 'admin' | 'viewer'): Promise<string>;
  /** Signs in by e-mail as a browser would: asks for a link, reads it from the mail, exchanges it. */
  signIn(email: string): Promise<OperatorSession>;
  close(): Promise<void>;
}

export interface OperatorSession {
  /** The `Cookie` header value the browser would send. */
  readonly cookie: string;
  readonly csrfToken: string;
  readonly setCookie: string;
  readonly operator: { id: string; email: string; role: string };
}

export async function startOperatorServer(
  options: { env?: Record<string, string>; clock?: Clock } = {},
): Promise<OperatorServer> {
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
  const name = `tollgate_ops_${process.pid}_${randomBytes(4).toString('hex')}`;
  const databaseUrl = await createScratchDatabase(serverUrl, name);
  const mail = await startMailSink();
  const server = await startTestServer({
    clock: options.clock,
    env: { ...options.env, DATABASE_URL: databaseUrl, SMTP_URL: mail.url },
  });
  const addOperator: OperatorServer['addOperator'] = async (email, role) => {
    const res = await server.graphql(
      'mutation($email: String!, $role: String!) { addOperator(email: $email, role: $role) { id } }',
      { email, role },
      server.adminToken,
    );
    if (res.body.errors) throw new Error(`addOperator failed: ${JSON.stringify(res.body.errors)}`);
    return res.body.data.addOperator.id;
  };
  const signIn: OperatorServer['signIn'] = async (email) => {
    const before = mail.received.length;
    await server.http.post('/dashboard/sign-in').send({ email }).expect(200, { success: true });
    const message = await mail.waitFor(
      (m) =>
        mail.received.indexOf(m) >= before && m.rcptTo.some((to) => to.toLowerCase() === email.toLowerCase()),
    );
    const token = signInTokenOf(message.parsed.text ?? '');
    const res = await server.http.post('/dashboard/session').send({ token }).expect(200);
    const setCookie = String(res.headers['set-cookie']?.[0] ?? '');
    expect(setCookie).toMatch(/^(__Host-)?tollgate_operator=tg_os_/);
    return {
      cookie: setCookie.split(';')[0]!,
      csrfToken: res.body.csrfToken,
      setCookie,
      operator: res.body.operator,
    };
  };
  return {
    server,
    mail,
    databaseUrl,
    addOperator,
    signIn,
    async close() {
      await server.close();
      await mail.close();
      await dropDatabase(serverUrl, name);
    },
  };
}

/** The token of an e-mailed dashboard sign-in link (`…/dashboard#sign-in=<token>`). */
export function signInTokenOf(text: string): string {
  const match = /\/dashboard#sign-in=([A-Za-z0-9_%-]+)/.exec(text);
  if (!match) throw new Error(`no sign-in link in: ${text}`);
  return decodeURIComponent(match[1]!);
}

/** A GraphQL request as the dashboard page sends it: the cookie, the anti-forgery header, same origin. */
export async function operatorGraphql(
  server: TestServer,
  session: OperatorSession,
  query: string,
  variables: Record<string, unknown> = {},
) {
  const res = await server.http
    .post('/graphql')
    .set('cookie', session.cookie)
    .set('x-csrf-token', session.csrfToken)
    .set('origin', server.url)
    .send({ query, variables });
  return {
    status: res.status,
    body: res.body as { data?: any; errors?: any[]; statusCode?: number },
    headers: res.headers,
  };
}
