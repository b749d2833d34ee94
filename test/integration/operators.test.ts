import { ManualClock } from '../../src/core/clock.js';
import { hashSecret } from '../../src/core/tokens.js';
import {
  type OperatorServer,
  operatorGraphql,
  signInTokenOf,
  startOperatorServer,
} from '../helpers/operators.js';

/**
 * Named operators: e-mail sign-in in a realm of its own, an httpOnly cookie session guarded against
 * cross-site requests, roles enforced by the API (not only by the page), and at least one owner always.
 */

const OPERATORS = '{ operators { id email role } }';
const APPS = '{ apps { id name } }';
const CREATE_APP = 'mutation($name: String!) { createApp(input: { name: $name }) { app { id } apiKey } }';
const ADD =
  'mutation($email: String!, $role: String!) { addOperator(email: $email, role: $role) { id email role } }';
const REMOVE = 'mutation($id: ID!) { removeOperator(id: $id) { id } }';
const CHANGE_ROLE =
  'mutation($id: ID!, $role: String!) { changeOperatorRole(id: $id, role: $role) { id role } }';

describe('operators', () => {
  let ops: OperatorServer;
  let clock: ManualClock;

  beforeAll(async () => {
    clock = new ManualClock();
    ops = await startOperatorServer({ clock });
  });
  afterAll(async () => {
    await ops.close();
  });

  it('answers a sign-in request alike for an operator and a stranger, and mails only the operator', async () => {
    await ops.addOperator('Known.Owner@example.com', 'owner');
    const before = ops.mail.received.length;
    const stranger = await ops.server.http.post('/dashboard/sign-in').send({ email: 'nobody@example.com' });
    const known = await ops.server.http.post('/dashboard/sign-in').send({ email: 'known.owner@example.com' });
    expect([stranger.status, stranger.body]).toEqual([200, { success: true }]);
    expect([known.status, known.body]).toEqual([200, { success: true }]);
    const mail = await ops.mail.waitFor((m) => m.rcptTo.includes('Known.Owner@example.com'));
    expect(signInTokenOf(mail.parsed.text ?? '')).toMatch(/^tg_ol_/);
    // Only the operator's message: nothing went to the stranger.
    expect(ops.mail.received.slice(before).flatMap((m) => m.rcptTo)).toEqual(['Known.Owner@example.com']);
    const [row] = await ops.server.deps.orm.em
      .fork()
      .getConnection()
      .execute('select token_hash from operator_sign_in_token order by created_at desc limit 1');
    // Stored as its hash only.
    expect(row.token_hash).toBe(hashSecret(signInTokenOf(mail.parsed.text ?? '')));
  });

  it('sets a host-only httpOnly SameSite=Strict cookie and uses each link once', async () => {
    await ops.addOperator('once@example.com', 'admin');
    await ops.server.http.post('/dashboard/sign-in').send({ email: 'once@example.com' }).expect(200);
    const mail = await ops.mail.waitFor((m) => m.rcptTo.includes('once@example.com'));
    const token = signInTokenOf(mail.parsed.text ?? '');
    const first = await ops.server.http.post('/dashboard/session').send({ token });
    expect(first.status).toBe(200);
    expect(first.body.operator).toMatchObject({ email: 'once@example.com', role: 'admin' });
    const cookie = String(first.headers['set-cookie'][0]);
    expect(cookie).toMatch(
      /^tollgate_operator=tg_os_[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=604800$/,
    );
    expect(cookie).not.toMatch(/Domain=/i);
    const again = await ops.server.http.post('/dashboard/session').send({ token });
    expect([again.status, again.body.statusCode]).toEqual([401, 401]);
  });

  it('limits sign-in requests per address (429 after 5 in 15 minutes)', async () => {
    for (let i = 0; i < 5; i++) {
      await ops.server.http.post('/dashboard/sign-in').send({ email: 'flood@example.com' }).expect(200);
    }
    const refused = await ops.server.http.post('/dashboard/sign-in').send({ email: 'flood@example.com' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      statusCode: 429,
      message: 'Too many sign-in attempts, try again later',
      error: 'Too Many Requests',
    });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('reads with the cookie and the anti-forgery token, and refuses the cookie without them', async () => {
    await ops.addOperator('reader@example.com', 'owner');
    const session = await ops.signIn('reader@example.com');
    const ok = await operatorGraphql(ops.server, session, OPERATORS);
    expect(ok.status).toBe(200);
    expect(ok.body.data.operators.map((o: { email: string }) => o.email)).toContain('reader@example.com');

    const noToken = await ops.server.http
      .post('/graphql')
      .set('cookie', session.cookie)
      .send({ query: OPERATORS });
    expect([noToken.status, noToken.body.statusCode]).toEqual([403, 403]);

    const wrongToken = await ops.server.http
      .post('/graphql')
      .set('cookie', session.cookie)
      .set('x-csrf-token', hashSecret('forged'))
      .send({ query: OPERATORS });
    expect(wrongToken.status).toBe(403);
  });

  it('refuses a cross-site form post and a cross-origin fetch that carry the cookie, never allowing credentials', async () => {
    await ops.addOperator('csrf-target@example.com', 'owner');
    const session = await ops.signIn('csrf-target@example.com');
    // A form on another site: form-encoded, foreign Origin, cross-site fetch metadata, no token.
    const form = await ops.server.http
      .post('/graphql')
      .set('cookie', session.cookie)
      .set('origin', 'https://evil.example')
      .set('sec-fetch-site', 'cross-site')
      .type('form')
      .send({ query: `mutation { addOperator(email: "evil@example.com", role: "owner") { id } }` });
    expect([form.status, form.body.statusCode]).toEqual([403, 403]);
    // A fetch from another origin that somehow learnt the token is refused for its Origin alone.
    const fetched = await ops.server.http
      .post('/graphql')
      .set('cookie', session.cookie)
      .set('x-csrf-token', session.csrfToken)
      .set('origin', 'http://localhost:9999')
      .send({ query: ADD, variables: { email: 'evil@example.com', role: 'owner' } });
    expect(fetched.status).toBe(403);
    expect(fetched.headers['access-control-allow-credentials']).toBeUndefined();
    const preflight = await ops.server.http
      .options('/graphql')
      .set('origin', 'http://localhost:9999')
      .set('access-control-request-method', 'POST')
      .set('access-control-request-headers', 'content-type, x-csrf-token');
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    const owner = await operatorGraphql(ops.server, session, OPERATORS);
    expect(owner.body.data.operators.map((o: { email: string }) => o.email)).not.toContain(
      'evil@example.com',
    );
  });

  it('lets a viewer read but refuses every write with 403, changing nothing', async () => {
    await ops.addOperator('viewer@example.com', 'viewer');
    const viewer = await ops.signIn('viewer@example.com');
    const apps = await operatorGraphql(ops.server, viewer, APPS);
    expect(apps.status).toBe(200);
    expect(Array.isArray(apps.body.data.apps)).toBe(true);
    const write = await operatorGraphql(ops.server, viewer, CREATE_APP, { name: 'viewer-made' });
    expect(write.status).toBe(403);
    expect(write.body.errors?.[0]?.extensions).toEqual({ code: 'FORBIDDEN', statusCode: 403 });
    expect(write.body.data).toBeUndefined();
    const after = await ops.server.graphql(APPS, {}, ops.server.adminToken);
    expect(after.body.data.apps.map((a: { name: string }) => a.name)).not.toContain('viewer-made');
    const operators = await operatorGraphql(ops.server, viewer, OPERATORS);
    expect(operators.body.errors?.[0]?.extensions).toEqual({ code: 'FORBIDDEN', statusCode: 403 });
  });

  it('lets an admin write but not manage operators', async () => {
    await ops.addOperator('admin@example.com', 'admin');
    const admin = await ops.signIn('admin@example.com');
    const created = await operatorGraphql(ops.server, admin, CREATE_APP, { name: 'admin-made' });
    expect(created.status).toBe(200);
    expect(created.body.data.createApp.apiKey).toMatch(/^tg_sk_/);
    for (const [query, variables] of [
      [OPERATORS, {}],
      [ADD, { email: 'by-admin@example.com', role: 'viewer' }],
    ] as const) {
      const refused = await operatorGraphql(ops.server, admin, query, variables);
      expect(refused.body.errors?.[0]?.extensions).toEqual({ code: 'FORBIDDEN', statusCode: 403 });
    }
  });

  it('ends a removed operator’s session at once', async () => {
    await ops.addOperator('boss@example.com', 'owner');
    const owner = await ops.signIn('boss@example.com');
    const added = await operatorGraphql(ops.server, owner, ADD, {
      email: 'leaver@example.com',
      role: 'admin',
    });
    expect(added.body.data.addOperator).toMatchObject({ email: 'leaver@example.com', role: 'admin' });
    const leaver = await ops.signIn('leaver@example.com');
    expect((await operatorGraphql(ops.server, leaver, APPS)).status).toBe(200);
    const removed = await operatorGraphql(ops.server, owner, REMOVE, { id: added.body.data.addOperator.id });
    expect(removed.body.data.removeOperator).toEqual({ id: added.body.data.addOperator.id });
    const after = await operatorGraphql(ops.server, leaver, APPS);
    expect([after.status, after.body.statusCode]).toEqual([401, 401]);
  });

  it('ends a revoked session, an idle one, and one signed out', async () => {
    await ops.addOperator('sessions@example.com', 'owner');
    const owner = await ops.signIn('sessions@example.com');
    const other = await ops.signIn('sessions@example.com');
    const sessions = await operatorGraphql(
      ops.server,
      owner,
      '{ operatorSessions { id operatorId current } }',
    );
    const mine = sessions.body.data.operatorSessions.filter((s: { current: boolean }) => s.current);
    expect(mine).toHaveLength(1);
    const otherId = sessions.body.data.operatorSessions.find(
      (s: { operatorId: string; current: boolean }) => !s.current && s.operatorId === owner.operator.id,
    ).id;
    await operatorGraphql(ops.server, owner, 'mutation($id: ID!) { revokeOperatorSession(id: $id) { id } }', {
      id: otherId,
    });
    expect((await operatorGraphql(ops.server, other, APPS)).status).toBe(401);
    expect((await operatorGraphql(ops.server, owner, APPS)).status).toBe(200);

    const idle = await ops.signIn('sessions@example.com');
    clock.advance(12 * 3_600_000 + 1000);
    expect((await operatorGraphql(ops.server, idle, APPS)).status).toBe(401);

    const leaving = await ops.signIn('sessions@example.com');
    const out = await ops.server.http
      .delete('/dashboard/session')
      .set('cookie', leaving.cookie)
      .set('x-csrf-token', leaving.csrfToken)
      .set('origin', ops.server.url);
    expect([out.status, out.body]).toEqual([200, { success: true }]);
    expect(String(out.headers['set-cookie'][0])).toMatch(/^tollgate_operator=; .*Max-Age=0$/);
    expect((await operatorGraphql(ops.server, leaving, APPS)).status).toBe(401);
  });

  it('ends a session used all along once OPERATOR_SESSION_MAX_DAYS have passed', async () => {
    await ops.addOperator('busy@example.com', 'admin');
    const busy = await ops.signIn('busy@example.com');
    // Used every 11 hours (inside the 12-hour idle limit) for just under 7 days: still signed in.
    for (let elapsed = 11; elapsed < 7 * 24; elapsed += 11) {
      clock.advance(11 * 3_600_000);
      expect((await operatorGraphql(ops.server, busy, APPS)).status).toBe(200);
    }
    clock.advance(11 * 3_600_000);
    const ended = await operatorGraphql(ops.server, busy, APPS);
    expect([ended.status, ended.body.statusCode]).toEqual([401, 401]);
  });

  it('keeps the last owner: neither removed nor demoted (409)', async () => {
    // This file's database: demote every owner but one, then try the last.
    const list = await ops.server.graphql(OPERATORS, {}, ops.server.adminToken);
    const owners = list.body.data.operators.filter((o: { role: string }) => o.role === 'owner');
    for (const o of owners.slice(1)) {
      const res = await ops.server.graphql(CHANGE_ROLE, { id: o.id, role: 'admin' }, ops.server.adminToken);
      expect(res.body.data.changeOperatorRole.role).toBe('admin');
    }
    const last = owners[0].id;
    const remove = await ops.server.graphql(REMOVE, { id: last }, ops.server.adminToken);
    expect(remove.body.errors?.[0]).toMatchObject({
      message: 'The last owner cannot be removed or demoted',
      extensions: { code: 'CONFLICT', statusCode: 409 },
    });
    const demote = await ops.server.graphql(CHANGE_ROLE, { id: last, role: 'viewer' }, ops.server.adminToken);
    expect(demote.body.errors?.[0]?.extensions).toEqual({ code: 'CONFLICT', statusCode: 409 });
  });
});
