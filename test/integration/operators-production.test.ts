import { loadConfig } from '../../src/config.js';
import { type OperatorServer, startOperatorServer } from '../helpers/operators.js';
import { productionEnv } from '../helpers/server.js';

/**
 * In production the operator cookie is `Secure` and `__Host-` prefixed (no sibling host can set or
 * shadow it), and the dashboard offers the admin-token sign-in only when DASHBOARD_TOKEN_SIGNIN says so.
 */

const ORIGIN = 'https://billing.example.com';

describe('operators in production', () => {
  let ops: OperatorServer;
  beforeAll(async () => {
    ops = await startOperatorServer({ env: productionEnv({ TRUST_PROXY: 'loopback' }) });
  });
  afterAll(async () => {
    await ops.close();
  });

  it('sets a Secure __Host- cookie and takes it only from its own origin', async () => {
    await ops.addOperator('prod-owner@example.com', 'owner');
    const session = await ops.signIn('prod-owner@example.com');
    expect(session.setCookie).toMatch(
      /^__Host-tollgate_operator=tg_os_[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Strict; Secure; Max-Age=604800$/,
    );
    const send = (origin: string) =>
      ops.server.http
        .post('/graphql')
        .set('cookie', session.cookie)
        .set('x-csrf-token', session.csrfToken)
        .set('origin', origin)
        .send({ query: '{ operators { email } }' });
    const own = await send(ORIGIN);
    expect(own.status).toBe(200);
    expect(own.body.data.operators).toEqual([{ email: 'prod-owner@example.com' }]);
    const foreign = await send('https://billing.example.com.evil.example');
    expect([foreign.status, foreign.body.statusCode]).toEqual([403, 403]);
    // The development name is not a credential in production.
    const devName = await ops.server.http
      .post('/graphql')
      .set('cookie', session.cookie.replace('__Host-', ''))
      .set('x-csrf-token', session.csrfToken)
      .set('origin', ORIGIN)
      .send({ query: '{ operators { email } }' });
    expect(devName.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('limits sign-in requests per client IP, whatever the addresses (429 after 30 in 15 minutes)', async () => {
    // Behind the trusted proxy, the client is the address it names.
    const from = (ip: string, email: string) =>
      ops.server.http.post('/dashboard/sign-in').set('x-forwarded-for', ip).send({ email });
    for (let i = 0; i < 30; i++) await from('203.0.113.7', `spray-${i}@example.com`).expect(200);
    const refused = await from('203.0.113.7', 'spray-last@example.com');
    expect([refused.status, refused.body.message]).toEqual([
      429,
      'Too many sign-in attempts, try again later',
    ]);
    await from('203.0.113.8', 'spray-last@example.com').expect(200);
  });

  it('offers the admin-token sign-in only with DASHBOARD_TOKEN_SIGNIN=true', async () => {
    const res = await ops.server.http.get('/dashboard/session');
    expect([res.status, res.body]).toEqual([200, { operator: null, csrfToken: null, tokenSignIn: false }]);
    const base = {
      ...productionEnv({ TRUST_PROXY: 'loopback' }),
      DATABASE_URL: 'postgres://db.example/tollgate',
      ADMIN_TOKEN: 'tg_admin_0123456789abcdef',
    };
    expect(loadConfig(base).operators.tokenSignIn).toBe(false);
    expect(loadConfig({ ...base, DASHBOARD_TOKEN_SIGNIN: 'true' }).operators.tokenSignIn).toBe(true);
    expect(loadConfig({ DATABASE_URL: 'postgres://db.example/tollgate' }).operators).toEqual({
      sessionIdleHours: 12,
      sessionMaxDays: 7,
      tokenSignIn: true,
    });
  });
});
