import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let apiKey: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey } = await server.createApp());
});
afterAll(async () => {
  await server.close();
});

async function createCustomer(metadata: Record<string, unknown> = {}) {
  const res = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email: `meta.${Date.now()}.${Math.random().toString(36).slice(2)}@example.com`, metadata });
  expect(res.status).toBe(201);
  return res.body as { id: string; metadata: Record<string, unknown> };
}

async function patchCustomer(id: string, body: Record<string, unknown>) {
  const res = await server.http
    .patch(`/v1/customers/${id}`)
    .set('authorization', `Bearer ${apiKey}`)
    .send(body);
  return res;
}

async function storedMetadata(id: string): Promise<Record<string, unknown>> {
  const res = await server.http.get(`/v1/customers/${id}`).set('authorization', `Bearer ${apiKey}`);
  return res.body.metadata;
}

describe('concurrent metadata updates', () => {
  it('keeps all 50 keys when 50 PATCHes each set a different key at once', async () => {
    const customer = await createCustomer();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => patchCustomer(customer.id, { metadata: { [`key${i}`]: i } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const expected = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`key${i}`, i]));
    expect(await storedMetadata(customer.id)).toEqual(expected);
  });

  it('loses no key when concurrent PATCHes add and remove different keys', async () => {
    const initial = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`old${i}`, i]));
    const customer = await createCustomer(initial);
    const removals = Array.from({ length: 20 }, (_, i) => ({ metadata: { [`old${i}`]: null } }));
    const additions = Array.from({ length: 20 }, (_, i) => ({ metadata: { [`new${i}`]: `v${i}` } }));
    const interleaved = removals.flatMap((removal, i) => [removal, additions[i]!]);
    const results = await Promise.all(interleaved.map((body) => patchCustomer(customer.id, body)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(await storedMetadata(customer.id)).toEqual(
      Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`new${i}`, `v${i}`])),
    );
  });

  it('holds the 50-key limit under concurrency: exactly the PATCHes that fit succeed', async () => {
    const initial = Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`k${i}`, i]));
    const customer = await createCustomer(initial);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => patchCustomer(customer.id, { metadata: { [`extra${i}`]: i } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 400)).toHaveLength(5);
    for (const refused of results.filter((r) => r.status === 400)) {
      expect(refused.body).toEqual({
        statusCode: 400,
        message: 'metadata: must have at most 50 keys (would have 51)',
        error: 'Bad Request',
      });
    }
    const stored = await storedMetadata(customer.id);
    expect(Object.keys(stored)).toHaveLength(50);
    const acceptedKeys = results
      .map((r, i) => (r.status === 200 ? `extra${i}` : undefined))
      .filter((k): k is string => k !== undefined);
    expect(
      Object.keys(stored)
        .filter((k) => k.startsWith('extra'))
        .sort(),
    ).toEqual(acceptedKeys.sort());
  });

  it('keeps name and metadata changes made by concurrent PATCHes', async () => {
    const customer = await createCustomer({ a: 1 });
    const [renamed, merged] = await Promise.all([
      patchCustomer(customer.id, { name: 'Renamed' }),
      patchCustomer(customer.id, { metadata: { b: 2 } }),
    ]);
    expect([renamed.status, merged.status]).toEqual([200, 200]);
    const res = await server.http
      .get(`/v1/customers/${customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(res.body).toMatchObject({ name: 'Renamed', metadata: { a: 1, b: 2 } });
  });
});
