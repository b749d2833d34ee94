import { randomBytes } from 'node:crypto';
import { Tollgate, TollgateAuth, TollgateError } from '@tollgate/client';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { sessionTokenFor } from '../helpers/stripe-fixtures.js';

/**
 * The client library's metering methods (`usage`, `creditGrants`, `balances`, the check's `amount`, and
 * the session's `recordUsage` / `balances`) against a real running Tollgate, with exact balances.
 */
let server: TestServer;
let appId: string;
let client: Tollgate;
let auth: TollgateAuth;

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp();
  appId = app.appId;
  client = new Tollgate({ apiKey: app.apiKey, baseUrl: server.url });
  auth = new TollgateAuth({ appId, baseUrl: server.url });
  const free = await server.graphql(
    `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
    {
      appId,
      input: { id: 'free', name: 'Free', features: { calls: { limit: 3, reset: 'never' } }, isDefault: true },
    },
    server.adminToken,
  );
  expect(free.body.errors).toBeUndefined();
});

afterAll(async () => {
  await server?.close();
});

async function newCustomer(): Promise<string> {
  const created = await client.customers.create({ email: `m-${randomBytes(5).toString('hex')}@example.com` });
  return created.id;
}

async function failure(call: Promise<unknown>): Promise<TollgateError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TollgateError)) throw new Error(`expected a TollgateError, got ${String(error)}`);
  return error;
}

const balance = (used: number, granted: number, remaining: number) => ({
  limit: 3,
  granted,
  used,
  remaining,
  overage: 0,
  resetsAt: null,
});

describe('metering through the API-key client', () => {
  it('checks with an amount, consumes once per idempotency key, grants, refunds and voids', async () => {
    const customerId = await newCustomer();

    const check = await client.entitlements.check('calls', { customerId, amount: 4 });
    expect(check).toEqual({ feature: 'calls', allowed: false, value: 3, balance: balance(0, 0, 3) });

    const key = `use-${randomBytes(4).toString('hex')}`;
    const used = await client.usage.record(
      { feature: 'calls', customerId, amount: 2 },
      { idempotencyKey: key },
    );
    expect(used).toEqual({
      id: expect.stringMatching(/^use_/),
      feature: 'calls',
      amount: 2,
      allowed: true,
      balance: balance(2, 0, 1),
    });
    const again = await client.usage.record(
      { feature: 'calls', customerId, amount: 2 },
      { idempotencyKey: key },
    );
    expect(again).toEqual(used);

    const short = await client.usage.record({ feature: 'calls', customerId, amount: 2 });
    expect(short).toEqual({ allowed: false, balance: balance(2, 0, 1) });

    const grant = await client.creditGrants.create({
      customerId,
      feature: 'calls',
      amount: 5,
      description: 'top-up',
    });
    expect(grant).toMatchObject({
      id: expect.stringMatching(/^grant_/),
      customerId,
      organizationId: null,
      feature: 'calls',
      amount: 5,
      remaining: 5,
      priority: 50,
      expiresAt: null,
      description: 'top-up',
      voidedAt: null,
    });
    expect(await client.balances.list({ customerId })).toEqual({
      data: [{ feature: 'calls', ...balance(2, 5, 6) }],
    });

    expect(await client.usage.refund(used.id as string)).toEqual({
      balance: { feature: 'calls', ...balance(0, 5, 8) },
    });
    expect((await failure(client.usage.refund(used.id as string))).statusCode).toBe(409);

    expect((await client.creditGrants.list({ customerId })).data.map((g) => g.id)).toEqual([grant.id]);
    const voided = await client.creditGrants.void(grant.id);
    expect(voided).toMatchObject({ id: grant.id, remaining: 0, voidedAt: expect.any(String) });
    expect((await failure(client.creditGrants.void(grant.id))).statusCode).toBe(409);
    expect(await client.balances.list({ customerId })).toEqual({
      data: [{ feature: 'calls', ...balance(0, 0, 3) }],
    });
  });
});

describe('metering through the session client', () => {
  it('consumes and reads its own balance, and checks an amount', async () => {
    const customerId = await newCustomer();
    const token = await sessionTokenFor(server, appId, customerId);

    const used = await auth.recordUsage(token, { feature: 'calls' });
    expect(used).toMatchObject({ feature: 'calls', amount: 1, allowed: true, balance: balance(1, 0, 2) });
    expect(await auth.balances(token)).toEqual({ data: [{ feature: 'calls', ...balance(1, 0, 2) }] });
    expect(await auth.check(token, 'calls', { amount: 3 })).toEqual({
      feature: 'calls',
      allowed: false,
      value: 3,
      balance: balance(1, 0, 2),
    });
    expect(await auth.check(token, 'calls', { amount: 2 })).toMatchObject({ allowed: true });
  });
});
