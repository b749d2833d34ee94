import { withContext } from '../../src/db.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Two Tollgate instances on one database, each caching API keys, sessions and the customers sessions
 * show: a revocation or change committed anywhere must be seen on the very next request on both.
 */
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer(), startTestServer()]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

async function sql<T = unknown>(text: string, params: unknown[] = []): Promise<T[]> {
  return withContext(a.deps.orm, () => a.deps.orm.em.getConnection().execute<T[]>(text, params));
}

const checkWithKey = (server: TestServer, key: string, customerId: string) =>
  server.http.get('/v1/entitlements/check/sso').query({ customerId }).set('authorization', `Bearer ${key}`);

const sessionOf = (server: TestServer, appId: string, token: string) =>
  server.http.get(`/v1/apps/${appId}/auth/session`).set('authorization', `Bearer ${token}`);

/** The answer to a revoked or unknown API key, exactly. */
function expectKeyRefused(res: { status: number; body: unknown }): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ statusCode: 401, message: 'Invalid or revoked API key', error: 'Unauthorized' });
}

/** Two requests per instance, so each instance answers the second from its cache. */
async function prime(send: (server: TestServer) => Promise<{ status: number }>): Promise<void> {
  for (const server of [a, b, a, b]) expect((await send(server)).status).toBe(200);
}

describe('credential caches across instances', () => {
  it('refuses an API key revoked through one instance on the very next request on both', async () => {
    const { appId, apiKey } = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer();
    const created = await a.graphql(
      'mutation($appId: ID!) { createApiKey(appId: $appId) { apiKey key { id } } }',
      { appId },
      a.adminToken,
    );
    const spare = created.body.data.createApiKey;
    await prime((server) => checkWithKey(server, spare.apiKey, customerId));

    const revoked = await a.graphql(
      'mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }',
      { id: spare.key.id },
      a.adminToken,
    );
    expect(revoked.body.data.revokeApiKey.revokedAt).not.toBeNull();
    for (const server of [b, a]) {
      expectKeyRefused(await checkWithKey(server, spare.apiKey, customerId));
    }
    // The app's other key is untouched.
    expect((await checkWithKey(b, apiKey, customerId)).status).toBe(200);
  });

  it('refuses an API key revoked or deleted with plain SQL on the very next request on both', async () => {
    const { appId, apiKey } = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer();
    await prime((server) => checkWithKey(server, apiKey, customerId));
    await sql('update api_key set revoked_at = now() where app_id = ?', [appId]);
    expect((await checkWithKey(b, apiKey, customerId)).status).toBe(401);
    expect((await checkWithKey(a, apiKey, customerId)).status).toBe(401);

    const other = await a.createApp();
    const otherCustomer = await new Fixtures(a, other.appId).customer();
    await prime((server) => checkWithKey(server, other.apiKey, otherCustomer));
    await sql('delete from api_key where app_id = ?', [other.appId]);
    expect((await checkWithKey(b, other.apiKey, otherCustomer)).status).toBe(401);
    expect((await checkWithKey(a, other.apiKey, otherCustomer)).status).toBe(401);
  });

  it('answers 404 at once on both for a customer deleted after an API key asked about it', async () => {
    const { appId, apiKey } = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer();
    await prime((server) => checkWithKey(server, apiKey, customerId));
    await sql('delete from customer where id = ?', [customerId]);
    for (const server of [b, a]) {
      const res = await checkWithKey(server, apiKey, customerId);
      expect(res.status).toBe(404);
      expect(res.body.message).toContain(customerId);
    }
  });

  it('writes a busy key’s lastUsedAt once, not once per request', async () => {
    const { appId, apiKey } = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer();
    expect((await checkWithKey(a, apiKey, customerId)).status).toBe(200);
    // The write happens off the request path: the first use is recorded soon after.
    const first = await eventually(async () => {
      const [row] = await sql<{ last_used_at: Date | null; xmin: string }>(
        'select last_used_at, xmin::text from api_key where app_id = ?',
        [appId],
      );
      return row?.last_used_at ? row : undefined;
    });
    for (let i = 0; i < 30; i++) expect((await checkWithKey(a, apiKey, customerId)).status).toBe(200);
    // Any UPDATE gives the row a new xmin: none happened for the 30 uses within the minute.
    const [after] = await sql<{ last_used_at: Date; xmin: string }>(
      'select last_used_at, xmin::text from api_key where app_id = ?',
      [appId],
    );
    expect(after).toEqual(first);
  });

  it('refuses a revoked session on auth/session on the very next request on both', async () => {
    const { appId } = await a.createApp();
    const fx = new Fixtures(a, appId);
    const customerId = await fx.customer('ses-revoke@example.com');
    const token = await fx.session(customerId);
    await prime((server) => sessionOf(server, appId, token));

    await sql('update session set revoked_at = now() where customer_id = ?', [customerId]);
    for (const server of [b, a]) {
      const res = await sessionOf(server, appId, token);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        statusCode: 401,
        message: 'Invalid or expired session token',
        error: 'Unauthorized',
      });
    }
  });

  it('shows a customer change made through one instance in auth/session on the other at once', async () => {
    const { appId, apiKey } = await a.createApp();
    const fx = new Fixtures(a, appId);
    const customerId = await fx.customer('ses-change@example.com');
    const token = await fx.session(customerId);
    await prime((server) => sessionOf(server, appId, token));

    const patched = await a.http
      .patch(`/v1/customers/${customerId}`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ name: 'Grace', metadata: { tier: 'gold' } });
    expect(patched.status).toBe(200);
    for (const server of [b, a]) {
      const res = await sessionOf(server, appId, token);
      expect(res.status).toBe(200);
      expect(res.body.customer).toEqual({
        id: customerId,
        email: 'ses-change@example.com',
        name: 'Grace',
        metadata: { tier: 'gold' },
      });
    }

    // A change written with plain SQL (a script, a restore) travels the same way.
    await sql(`update customer set name = 'Ada' where id = ?`, [customerId]);
    expect((await sessionOf(b, appId, token)).body.customer.name).toBe('Ada');
  });

  it('still answers 404 for an unknown app and 401 for another app’s session', async () => {
    const first = await a.createApp();
    const second = await a.createApp();
    const fx = new Fixtures(a, first.appId);
    const token = await fx.session(await fx.customer());
    await prime((server) => sessionOf(server, first.appId, token));
    const unknown = await sessionOf(b, 'app_doesnotexist0000000000', token);
    expect(unknown.status).toBe(404);
    const other = await sessionOf(b, second.appId, token);
    expect(other.status).toBe(401);
    expect(other.body.message).toBe('The session token does not belong to this app');
  });
});

describe('customer reads by id across instances', () => {
  const readWithKey = (server: TestServer, key: string, customerId: string) =>
    server.http.get(`/v1/customers/${customerId}`).set('authorization', `Bearer ${key}`);

  it('shows a change made through one instance, or with plain SQL, on the very next read on both', async () => {
    const { appId, apiKey } = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer('read-change@example.com');
    await prime((server) => readWithKey(server, apiKey, customerId));

    const patched = await a.http
      .patch(`/v1/customers/${customerId}`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ name: 'Grace', metadata: { tier: 'gold', nested: { seats: 3 } } });
    expect(patched.status).toBe(200);
    for (const server of [b, a, b]) {
      const res = await readWithKey(server, apiKey, customerId);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(patched.body);
      expect(res.body).toMatchObject({ name: 'Grace', metadata: { tier: 'gold', nested: { seats: 3 } } });
    }

    // A later merge of the metadata starts from the stored row, not from what a read remembered.
    const merged = await b.http
      .patch(`/v1/customers/${customerId}`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ metadata: { nested: null, plan: 'team' } });
    expect(merged.status).toBe(200);
    expect(merged.body.metadata).toEqual({ tier: 'gold', plan: 'team' });
    for (const server of [a, b])
      expect((await readWithKey(server, apiKey, customerId)).body).toEqual(merged.body);

    await sql(`update customer set name = 'Ada' where id = ?`, [customerId]);
    for (const server of [b, a])
      expect((await readWithKey(server, apiKey, customerId)).body.name).toBe('Ada');

    await sql('delete from customer where id = ?', [customerId]);
    for (const server of [b, a]) {
      const res = await readWithKey(server, apiKey, customerId);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        statusCode: 404,
        message: `Customer ${customerId} not found`,
        error: 'Not Found',
      });
    }
  });

  it('refuses a key revoked after it read a customer, on the very next read on both', async () => {
    const { appId, apiKey } = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer();
    await prime((server) => readWithKey(server, apiKey, customerId));
    await sql('update api_key set revoked_at = now() where app_id = ?', [appId]);
    for (const server of [b, a]) {
      expectKeyRefused(await readWithKey(server, apiKey, customerId));
    }
  });

  it('answers 404 to another app’s key for a customer both instances remember', async () => {
    const { appId, apiKey } = await a.createApp();
    const other = await a.createApp();
    const customerId = await new Fixtures(a, appId).customer();
    await prime((server) => readWithKey(server, apiKey, customerId));
    const theirs = await new Fixtures(a, other.appId).customer();
    await prime((server) => readWithKey(server, other.apiKey, theirs));
    for (const server of [b, a]) {
      const res = await readWithKey(server, other.apiKey, customerId);
      expect(res.status).toBe(404);
      expect(res.body.message).toBe(`Customer ${customerId} not found`);
    }
  });
});
