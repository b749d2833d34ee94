import type { Response, Test } from 'supertest';
import { ManualClock } from '../../src/core/clock.js';
import { withContext } from '../../src/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CUSTOMER_FIELDS = ['createdAt', 'email', 'id', 'metadata', 'name', 'paymentCustomerId', 'updatedAt'];

let server: TestServer;
const clock = new ManualClock(new Date('2026-01-01T00:00:00.000Z'));
let app: { appId: string; apiKey: string };
let otherApp: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer({ clock });
  app = await server.createApp();
  otherApp = await server.createApp();
});
afterAll(async () => {
  await server.close();
});

/** Sends the request with an API key or session token, or with no credential at all (null). */
function as(key: string | null, req: Test): Test {
  return key === null ? req : req.set('authorization', `Bearer ${key}`);
}

const list = (query: Record<string, string | number> = {}, key: string | null = app.apiKey) =>
  as(key, server.http.get('/v1/customers').query(query));
const create = (body: unknown, key: string | null = app.apiKey) =>
  as(key, server.http.post('/v1/customers').send(body as object));
const get = (id: string, key: string | null = app.apiKey) =>
  as(key, server.http.get(`/v1/customers/${encodeURIComponent(id)}`));
const patch = (id: string, body: unknown, key: string | null = app.apiKey) =>
  as(key, server.http.patch(`/v1/customers/${encodeURIComponent(id)}`).send(body as object));

let sequence = 0;
/** A fresh address per call, so tests never collide on the per-app uniqueness of e-mail. */
function uniqueEmail(local = 'user'): string {
  sequence += 1;
  return `${local}.${sequence}.${Date.now()}@example.com`;
}

function expectError(res: Response, status: number, message: string | RegExp) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'message', 'statusCode']);
  expect(res.body.statusCode).toBe(status);
  if (typeof message === 'string') expect(res.body.message).toBe(message);
  else expect(res.body.message).toMatch(message);
}

describe('POST /v1/customers', () => {
  it('creates a customer with exactly the seven fields and answers 201', async () => {
    const email = uniqueEmail();
    const res = await create({ email });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(CUSTOMER_FIELDS);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^cus_[a-z2-7]{32}$/),
      email,
      name: null,
      metadata: {},
      paymentCustomerId: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    });
    expect((await get(res.body.id)).body).toEqual(res.body);
  });

  it('stores the name and metadata, leaving out metadata keys sent as null', async () => {
    const email = uniqueEmail();
    const metadata = { plan: 'gold', seats: 3, nested: { a: [1, 2, { b: true }] }, gone: null };
    const res = await create({ email, name: 'Ada Lovelace', metadata });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe('Ada Lovelace');
    expect(res.body.metadata).toEqual({ plan: 'gold', seats: 3, nested: { a: [1, 2, { b: true }] } });
    expect((await get(res.body.id)).body.metadata).toEqual(res.body.metadata);
  });

  it('keeps the e-mail as sent (case included)', async () => {
    const email = `Mixed.Case.${Date.now()}@Example.COM`;
    const res = await create({ email });
    expect(res.status).toBe(201);
    expect(res.body.email).toBe(email);
  });

  it('answers 400 when the e-mail is missing', async () => {
    expectError(await create({ name: 'No Mail' }), 400, 'email: is required');
  });

  it.each([
    ['not-an-email'],
    ['missing-domain@'],
    ['@example.com'],
    ['two@@example.com'],
    [' padded@example.com'],
    [''],
  ])('answers 400 for the invalid e-mail %j', async (email) => {
    expectError(await create({ email }), 400, /^email: /);
  });

  it('answers 400 when the e-mail is not a string', async () => {
    expectError(await create({ email: 42 }), 400, /^email: .*expected string/);
  });

  it('answers 400 naming an unknown field', async () => {
    expectError(await create({ email: uniqueEmail(), nickname: 'x' }), 400, 'unknown field: nickname');
  });

  it('answers 400 when the body is not a JSON object', async () => {
    const res = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${app.apiKey}`)
      .set('content-type', 'application/json')
      .send('["a@example.com"]');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('Bad Request');
  });

  it('answers 400 when the name is not a string or is empty', async () => {
    expectError(await create({ email: uniqueEmail(), name: 5 }), 400, /^name: /);
    expectError(await create({ email: uniqueEmail(), name: '' }), 400, 'name: must not be empty');
    expectError(
      await create({ email: uniqueEmail(), name: 'x'.repeat(201) }),
      400,
      'name: must be at most 200 characters',
    );
  });

  it.each([
    ['an array', ['a']],
    ['a string', 'plan=gold'],
    ['a number', 7],
    ['null', null],
  ])('answers 400 when metadata is %s', async (_label, metadata) => {
    expectError(await create({ email: uniqueEmail(), metadata }), 400, 'metadata: must be an object');
  });

  it('answers 400 when metadata has more than 50 keys', async () => {
    const metadata = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
    expectError(
      await create({ email: uniqueEmail(), metadata }),
      400,
      'metadata: must have at most 50 keys (would have 51)',
    );
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    expect((await create({ email: uniqueEmail(), metadata: fifty })).status).toBe(201);
  });

  it('answers 400 when a metadata key is longer than 40 characters or empty', async () => {
    expectError(
      await create({ email: uniqueEmail(), metadata: { ['k'.repeat(41)]: 1 } }),
      400,
      'metadata: keys must be 1 to 40 characters (got one of 41)',
    );
    expectError(
      await create({ email: uniqueEmail(), metadata: { '': 1 } }),
      400,
      'metadata: keys must be 1 to 40 characters (got one of 0)',
    );
    expect((await create({ email: uniqueEmail(), metadata: { ['k'.repeat(40)]: 1 } })).status).toBe(201);
  });

  it('answers 400 when metadata is over 16 KiB as JSON', async () => {
    // {"blob":"…"} is 11 bytes of framing around the string.
    const atLimit = { blob: 'x'.repeat(16 * 1024 - 11) };
    expect((await create({ email: uniqueEmail(), metadata: atLimit })).status).toBe(201);
    const over = { blob: 'x'.repeat(16 * 1024 - 10) };
    expectError(
      await create({ email: uniqueEmail(), metadata: over }),
      400,
      'metadata: must be at most 16384 bytes as JSON (would be 16385)',
    );
  });

  it('keeps a metadata key named __proto__ as an ordinary key', async () => {
    const res = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${app.apiKey}`)
      .set('content-type', 'application/json')
      .send(`{"email":"${uniqueEmail()}","metadata":{"__proto__":{"admin":true},"a":1}}`);
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).metadata).toEqual(JSON.parse('{"__proto__":{"admin":true},"a":1}'));
  });

  it('answers 409 for an e-mail already used in the app, in any case', async () => {
    const email = uniqueEmail('dupe');
    expect((await create({ email })).status).toBe(201);
    expectError(await create({ email }), 409, `A customer with e-mail ${email} already exists`);
    const shouted = email.toUpperCase();
    expectError(await create({ email: shouted }), 409, `A customer with e-mail ${shouted} already exists`);
  });

  it('accepts the same e-mail in another app', async () => {
    const email = uniqueEmail('shared');
    expect((await create({ email })).status).toBe(201);
    expect((await create({ email }, otherApp.apiKey)).status).toBe(201);
  });

  it('creates exactly one customer when the same e-mail is posted concurrently', async () => {
    const email = uniqueEmail('race');
    const results = await Promise.all(Array.from({ length: 10 }, () => create({ email })));
    expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(409)]);
    const found = await list({ email });
    expect(found.body.pagination.total).toBe(1);
  });
});

describe('GET /v1/customers/:id', () => {
  it('answers 404 in the envelope for an unknown id', async () => {
    expectError(await get('cus_doesnotexist'), 404, 'Customer cus_doesnotexist not found');
  });

  it("answers 404 for another app's customer, exactly as for an unknown one", async () => {
    const theirs = await create({ email: uniqueEmail() }, otherApp.apiKey);
    expectError(await get(theirs.body.id), 404, `Customer ${theirs.body.id} not found`);
  });

  it('answers 404 for an absurdly long id without echoing it', async () => {
    expectError(await get('x'.repeat(500)), 404, 'Customer not found');
  });
});

describe('PATCH /v1/customers/:id', () => {
  async function fresh(body: Record<string, unknown> = {}) {
    const res = await create({ email: uniqueEmail(), ...body });
    expect(res.status).toBe(201);
    return res.body as Record<string, any>;
  }

  it('adds and overwrites sent keys, removes keys sent as null and keeps unsent keys', async () => {
    const customer = await fresh({ metadata: { keep: 'k', overwrite: 1, remove: true } });
    const res = await patch(customer.id, { metadata: { overwrite: 2, remove: null, added: { deep: [1] } } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(CUSTOMER_FIELDS);
    expect(res.body.metadata).toEqual({ keep: 'k', overwrite: 2, added: { deep: [1] } });
    expect((await get(customer.id)).body.metadata).toEqual(res.body.metadata);
  });

  it('replaces a nested object value as a whole (the merge is one level deep)', async () => {
    const customer = await fresh({ metadata: { prefs: { a: 1, b: 2 } } });
    const res = await patch(customer.id, { metadata: { prefs: { c: 3 } } });
    expect(res.body.metadata).toEqual({ prefs: { c: 3 } });
  });

  it('removing a key that does not exist is not an error', async () => {
    const customer = await fresh({ metadata: { a: 1 } });
    const res = await patch(customer.id, { metadata: { missing: null } });
    expect(res.status).toBe(200);
    expect(res.body.metadata).toEqual({ a: 1 });
  });

  it('changes the name, and null clears it, leaving metadata alone', async () => {
    const customer = await fresh({ name: 'Old', metadata: { a: 1 } });
    const renamed = await patch(customer.id, { name: 'New' });
    expect(renamed.body).toMatchObject({ name: 'New', metadata: { a: 1 }, email: customer.email });
    const cleared = await patch(customer.id, { name: null });
    expect(cleared.body).toMatchObject({ name: null, metadata: { a: 1 } });
  });

  it('moves updatedAt on every change and never createdAt', async () => {
    const customer = await fresh();
    clock.advance(60_000);
    const first = await patch(customer.id, { name: 'Changed' });
    expect(first.body.createdAt).toBe(customer.createdAt);
    expect(first.body.updatedAt).toBe(new Date(Date.parse(customer.updatedAt) + 60_000).toISOString());
    clock.advance(1_000);
    const second = await patch(customer.id, { metadata: { x: 1 } });
    expect(second.body.createdAt).toBe(customer.createdAt);
    expect(Date.parse(second.body.updatedAt)).toBe(Date.parse(first.body.updatedAt) + 1_000);
  });

  it('leaves updatedAt alone when nothing changes', async () => {
    const customer = await fresh({ name: 'Same', metadata: { a: 1 } });
    clock.advance(1_000);
    const res = await patch(customer.id, { name: 'Same', metadata: { a: 1, b: null } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(customer);
    expect((await patch(customer.id, {})).body).toEqual(customer);
  });

  it('answers 400 for the e-mail and other unknown fields', async () => {
    const customer = await fresh();
    expectError(await patch(customer.id, { email: uniqueEmail() }), 400, 'unknown field: email');
    expectError(await patch(customer.id, { id: 'cus_x', plan: 'x' }), 400, 'unknown fields: id, plan');
  });

  it('answers 400 when metadata is not an object', async () => {
    const customer = await fresh();
    expectError(await patch(customer.id, { metadata: null }), 400, 'metadata: must be an object');
    expectError(await patch(customer.id, { metadata: [1] }), 400, 'metadata: must be an object');
  });

  it('answers 400 and changes nothing when the merged metadata would exceed 50 keys', async () => {
    const metadata = Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`k${i}`, i]));
    const customer = await fresh({ metadata });
    const six = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`n${i}`, i]));
    expectError(
      await patch(customer.id, { metadata: six }),
      400,
      'metadata: must have at most 50 keys (would have 51)',
    );
    expect((await get(customer.id)).body).toEqual(customer);
    // Removing keys in the same request makes room.
    const res = await patch(customer.id, { metadata: { ...six, k0: null } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.metadata)).toHaveLength(50);
  });

  it('answers 400 when the merged metadata would be over 16 KiB', async () => {
    const customer = await fresh({ metadata: { a: 'x'.repeat(10_000) } });
    expectError(
      await patch(customer.id, { metadata: { b: 'y'.repeat(7_000) } }),
      400,
      /^metadata: must be at most 16384 bytes as JSON/,
    );
  });

  it("answers 404 for an unknown or another app's customer and changes nothing", async () => {
    expectError(await patch('cus_doesnotexist', { name: 'x' }), 404, 'Customer cus_doesnotexist not found');
    const theirs = await create({ email: uniqueEmail(), name: 'Theirs' }, otherApp.apiKey);
    expectError(await patch(theirs.body.id, { name: 'Mine' }), 404, `Customer ${theirs.body.id} not found`);
    expect((await get(theirs.body.id, otherApp.apiKey)).body.name).toBe('Theirs');
  });
});

describe('GET /v1/customers', () => {
  let listApp: { appId: string; apiKey: string };
  const created: Record<string, any>[] = [];

  beforeAll(async () => {
    listApp = await server.createApp();
    const emails = [
      'alice@example.com',
      'Bob.Smith@Example.com',
      'carol_1@example.org',
      'carolx1@example.org',
      'dave%off@example.net',
      'daveXoff@example.net',
      'erin@alice-corp.io',
    ];
    for (const email of emails) {
      clock.advance(1_000);
      const res = await create({ email }, listApp.apiKey);
      expect(res.status).toBe(201);
      created.push(res.body);
    }
  });

  const listIn = (query: Record<string, string | number> = {}) => list(query, listApp.apiKey);

  it('lists newest first with the default limit and offset', async () => {
    const res = await listIn();
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'pagination']);
    expect(res.body.pagination).toEqual({ total: 7, limit: 20, offset: 0 });
    expect(res.body.data).toEqual([...created].reverse());
  });

  it('pages with limit and offset while total counts all customers', async () => {
    const page = await listIn({ limit: 2, offset: 3 });
    expect(page.body.pagination).toEqual({ total: 7, limit: 2, offset: 3 });
    expect(page.body.data.map((c: any) => c.id)).toEqual([created[3]!.id, created[2]!.id]);
    const beyond = await listIn({ limit: 5, offset: 100 });
    expect(beyond.body).toEqual({ data: [], pagination: { total: 7, limit: 5, offset: 100 } });
  });

  it('filters by a case-insensitive fragment anywhere in the e-mail', async () => {
    const res = await listIn({ email: 'ALICE' });
    expect(res.body.data.map((c: any) => c.email)).toEqual(['erin@alice-corp.io', 'alice@example.com']);
    expect(res.body.pagination.total).toBe(2);
    const start = await listIn({ email: 'bob.s' });
    expect(start.body.data.map((c: any) => c.email)).toEqual(['Bob.Smith@Example.com']);
    const domain = await listIn({ email: '@EXAMPLE.COM' });
    expect(domain.body.pagination.total).toBe(2);
  });

  it('treats _ and % in the filter as literal characters', async () => {
    const underscore = await listIn({ email: 'carol_1' });
    expect(underscore.body.data.map((c: any) => c.email)).toEqual(['carol_1@example.org']);
    const percent = await listIn({ email: 'dave%off' });
    expect(percent.body.data.map((c: any) => c.email)).toEqual(['dave%off@example.net']);
    const backslash = await listIn({ email: '\\' });
    expect(backslash.body).toEqual({ data: [], pagination: { total: 0, limit: 20, offset: 0 } });
  });

  it('counts every match in total while the page holds at most limit', async () => {
    const res = await listIn({ email: 'example', limit: 1 });
    expect(res.body.pagination).toEqual({ total: 6, limit: 1, offset: 0 });
    expect(res.body.data).toHaveLength(1);
  });

  it("never lists another app's customers", async () => {
    const res = await list({ email: 'alice@example.com' }, otherApp.apiKey);
    expect(res.body.data.every((c: any) => !created.some((mine) => mine.id === c.id))).toBe(true);
  });

  it.each([
    [{ limit: 0 }, 'limit: limit must be an integer between 1 and 100'],
    [{ limit: 101 }, 'limit: limit must be an integer between 1 and 100'],
    [{ limit: -1 }, 'limit: limit must be a non-negative integer'],
    [{ limit: '1.5' }, 'limit: limit must be a non-negative integer'],
    [{ limit: 'ten' }, 'limit: limit must be a non-negative integer'],
    [{ offset: -1 }, 'offset: offset must be a non-negative integer'],
    [{ offset: 'x' }, 'offset: offset must be a non-negative integer'],
    [{ offset: '99999999999999999999' }, /offset: offset is too large/],
    [{ email: `${'a'.repeat(250)}@x.io` }, 'email: must be at most 254 characters'],
    [{ sort: 'email' }, 'unknown field: sort'],
  ])('answers 400 for the query %j', async (query, message) => {
    expectError(await listIn(query), 400, message);
  });

  it('answers 400 when a parameter is repeated', async () => {
    const res = await server.http
      .get('/v1/customers?limit=1&limit=2')
      .set('authorization', `Bearer ${listApp.apiKey}`);
    expectError(res, 400, /^limit: /);
  });
});

describe('credentials on /v1/customers', () => {
  let sessionToken: string;
  let customerId: string;

  beforeAll(async () => {
    const customer = await create({ email: uniqueEmail('session') });
    customerId = customer.body.id;
    const issued = await withContext(server.deps.orm, () =>
      server.services.sessions.issue({ appId: app.appId, customerId }),
    );
    sessionToken = issued.token;
  });

  const endpoints = () =>
    [
      ['GET /v1/customers', (key: string | null) => list({}, key)],
      ['POST /v1/customers', (key: string | null) => create({ email: uniqueEmail() }, key)],
      ['GET /v1/customers/:id', (key: string | null) => get(customerId, key)],
      ['PATCH /v1/customers/:id', (key: string | null) => patch(customerId, { name: 'x' }, key)],
    ] as const;

  it('answers 401 without a credential', async () => {
    for (const [, call] of endpoints()) {
      expectError(await call(null), 401, 'Invalid or missing credentials');
    }
  });

  it('answers 401 for an unknown API key', async () => {
    for (const [, call] of endpoints()) {
      expectError(await call('tg_sk_not-a-real-key'), 401, 'Invalid or revoked API key');
    }
  });

  it('answers 403 for a customer session token', async () => {
    for (const [, call] of endpoints()) {
      expectError(await call(sessionToken), 403, 'This operation needs an API key');
    }
    expect((await get(customerId)).body.name).toBeNull();
  });

  it('answers 403 for the admin token', async () => {
    for (const [, call] of endpoints()) {
      expectError(await call(server.adminToken), 403, 'This operation needs an API key');
    }
  });
});
