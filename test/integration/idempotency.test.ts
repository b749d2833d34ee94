import { randomBytes, randomUUID } from 'node:crypto';
import { withContext } from '../../src/db.js';
import { requestFingerprint } from '../../src/modules/idempotency/idempotency-rules.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startServerWithUnreachableStripe } from '../helpers/stripe-fixtures.js';

let server: TestServer;
let appId: string;
let apiKey: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ appId, apiKey } = await server.createApp({ organizationsEnabled: true }));
});

afterAll(async () => {
  await server?.close();
});

const email = (label = 'idem') => `${label}-${randomBytes(5).toString('hex')}@example.com`;

function createCustomer(body: object, key?: string, token = apiKey) {
  const req = server.http.post('/v1/customers').set('authorization', `Bearer ${token}`);
  if (key !== undefined) req.set('idempotency-key', key);
  return req.send(body);
}

async function customersWithEmail(address: string): Promise<number> {
  const res = await server.http
    .get(`/v1/customers?email=${encodeURIComponent(address)}`)
    .set('authorization', `Bearer ${apiKey}`);
  expect(res.status).toBe(200);
  return res.body.pagination.total;
}

function graphqlWithKey(query: string, variables: object, token: string | undefined, key: string) {
  const req = server.http.post('/graphql').set('idempotency-key', key);
  if (token) req.set('authorization', `Bearer ${token}`);
  return req.send({ query, variables });
}

async function records(credentialKey: string) {
  return withContext(server.deps.orm, () =>
    server.deps.orm.em.execute<{ response_status: number | null; owner_token: string | null }[]>(
      'select response_status, owner_token from idempotency_record where key = ?',
      [credentialKey],
    ),
  );
}

describe('Idempotency-Key on POST /v1', () => {
  it('replays the first answer (status, body, Idempotent-Replayed) without running the request again', async () => {
    const key = randomUUID();
    const body = { email: email(), name: 'Ada', metadata: { plan: 'x' } };
    const first = await createCustomer(body, key);
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    // The same body with its keys in another order is the same request.
    const again = await createCustomer({ metadata: { plan: 'x' }, name: 'Ada', email: body.email }, key);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['content-type']).toMatch(/^application\/json/);
    expect(again.body).toEqual(first.body);
    expect(await customersWithEmail(body.email)).toBe(1);
  });

  it('replays a client error too: the duplicate that was refused stays refused with the same message', async () => {
    const address = email();
    expect((await createCustomer({ email: address })).status).toBe(201);
    const key = randomUUID();
    const first = await createCustomer({ email: address }, key);
    expect(first.status).toBe(409);
    const again = await createCustomer({ email: address }, key);
    expect(again.status).toBe(409);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('answers 409 naming the reuse when the same key comes with another body, and changes nothing', async () => {
    const key = randomUUID();
    const firstEmail = email();
    expect((await createCustomer({ email: firstEmail }, key)).status).toBe(201);
    const otherEmail = email();
    const reused = await createCustomer({ email: otherEmail }, key);
    expect(reused.status).toBe(409);
    expect(reused.body).toEqual({
      statusCode: 409,
      message:
        'Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request',
      error: 'Conflict',
    });
    expect(reused.headers['idempotent-replayed']).toBeUndefined();
    expect(await customersWithEmail(otherEmail)).toBe(0);
  });

  it('runs a request once under 20 concurrent repeats: one customer, twenty identical answers', async () => {
    const key = randomUUID();
    const body = { email: email('race'), name: 'Grace' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => createCustomer(body, key)));
    expect(answers.map((res) => res.status)).toEqual(Array(20).fill(201));
    const ids = new Set(answers.map((res) => res.body.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    expect(await customersWithEmail(body.email)).toBe(1);
  });

  it('runs a request once when the repeats are spread over two instances sharing the database', async () => {
    const second = await startTestServer();
    try {
      const key = randomUUID();
      const body = { email: email('instances') };
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? server : second).http
            .post('/v1/customers')
            .set('authorization', `Bearer ${apiKey}`)
            .set('idempotency-key', key)
            .send(body),
        ),
      );
      expect(answers.map((res) => res.status)).toEqual(Array(20).fill(201));
      expect(new Set(answers.map((res) => res.body.id)).size).toBe(1);
      expect(answers.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
      expect(await customersWithEmail(body.email)).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('keeps keys per credential: the same key under another API key runs on its own', async () => {
    const other = await withContext(server.deps.orm, () =>
      server.services.apps.createApiKey({ kind: 'admin' }, appId),
    );
    const key = randomUUID();
    const a = await createCustomer({ email: email() }, key);
    const b = await createCustomer({ email: email() }, key, other.secret);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.body.id).not.toBe(a.body.id);
  });

  it('takes over a record whose first run died (lease passed without an answer) and runs the request', async () => {
    const key = randomUUID();
    const body = { email: email('crash') };
    const credentialId = await withContext(server.deps.orm, async () => {
      const [row] = await server.deps.orm.em.execute<{ id: string }[]>(
        'select id from api_key where app_id = ? order by created_at limit 1',
        [appId],
      );
      await server.deps.orm.em.execute(
        `insert into idempotency_record (credential_id, key, app_id, fingerprint, owner_token, locked_until, created_at, expires_at)
         values (?, ?, ?, ?, 'dead-process', now() - interval '1 second', now() - interval '1 minute', now() + interval '1 day')`,
        [row!.id, key, appId, requestFingerprint('POST', '/v1/customers', body)],
      );
      return row!.id;
    });
    expect(credentialId).toMatch(/^key_/);
    const res = await createCustomer(body, key);
    expect(res.status).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await records(key)).toEqual([{ response_status: 201, owner_token: null }]);
  });

  it('does not keep a 5xx answer: a retry after a provider outage runs again', async () => {
    const down = await startServerWithUnreachableStripe();
    try {
      const app = await down.createApp();
      const fixtures = new Fixtures(down, app.appId);
      const planId = await fixtures.plan('pro', { seats: 5 });
      const subscriptionId = await fixtures.subscription(
        { customerId: await fixtures.customer() },
        planId,
        'active',
      );
      const key = randomUUID();
      const checkout = () =>
        down.http
          .post(`/v1/subscriptions/${subscriptionId}/cancel`)
          .set('authorization', `Bearer ${app.apiKey}`)
          .set('idempotency-key', key)
          .send({});
      const first = await checkout();
      expect(first.status).toBe(503);
      const second = await checkout();
      expect(second.status).toBe(503);
      expect(second.headers['idempotent-replayed']).toBeUndefined();
      const rows = await withContext(down.deps.orm, () =>
        down.deps.orm.em.execute('select 1 from idempotency_record where key = ?', [key]),
      );
      expect(rows).toEqual([]);
    } finally {
      await down.close();
    }
  });

  it('refuses the header (400) on the public login POSTs, which carry no credential and answer secrets', async () => {
    for (const path of [`/v1/apps/${appId}/auth/magic-link`, `/v1/apps/${appId}/auth/verify`]) {
      const res = await server.http
        .post(path)
        .set('idempotency-key', randomUUID())
        .send(
          path.endsWith('verify')
            ? { token: 'tg_ml_x' }
            : { email: email(), redirectUrl: 'http://localhost:3000/cb' },
        );
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400,
        message:
          'Idempotency-Key is not accepted here: this endpoint is public, or its answer carries a secret',
        error: 'Bad Request',
      });
    }
  });

  it('refuses the header where the answer hands out a webhook signing secret', async () => {
    const created = await server.http
      .post('/v1/webhook-endpoints')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ url: 'http://127.0.0.1:9/hook' });
    expect(created.status).toBe(201);
    for (const path of [
      '/v1/webhook-endpoints',
      `/v1/webhook-endpoints/${created.body.endpoint.id}/rotate-secret`,
    ]) {
      const res = await server.http
        .post(path)
        .set('authorization', `Bearer ${apiKey}`)
        .set('idempotency-key', randomUUID())
        .send(path.endsWith('rotate-secret') ? {} : { url: 'http://127.0.0.1:9/other' });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(
        'Idempotency-Key is not accepted here: this endpoint is public, or its answer carries a secret',
      );
    }
  });

  it('refuses the header where the answer is a signed entitlement token', async () => {
    const customer = await createCustomer({ email: email() });
    expect(customer.status).toBe(201);
    const res = await server.http
      .post(`/v1/apps/${appId}/auth/entitlement-token`)
      .set('authorization', `Bearer ${apiKey}`)
      .set('idempotency-key', randomUUID())
      .send({ customerId: customer.body.id });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(
      'Idempotency-Key is not accepted here: this endpoint is public, or its answer carries a secret',
    );
  });

  it('refuses a malformed key, and a key without an app credential', async () => {
    const bad = await createCustomer({ email: email() }, 'has space');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe(
      'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces',
    );
    const anonymous = await server.http
      .post('/v1/customers')
      .set('idempotency-key', randomUUID())
      .send({ email: email() });
    expect(anonymous.status).toBe(400);
    expect(anonymous.body.message).toBe('Idempotency-Key needs an API key or a customer session token');
  });

  it('applies to session tokens as their own credential', async () => {
    const billing = new BillingFixtures(server, appId);
    const plan = await billing.plan();
    const customer = await billing.customer();
    const session = await billing.session(customer.id);
    const key = randomUUID();
    const send = () =>
      server.http
        .post('/v1/checkout/session')
        .set('authorization', `Bearer ${session}`)
        .set('idempotency-key', key)
        .send({
          customerId: customer.id,
          planId: plan.slug,
          successUrl: 'http://localhost:3000/ok',
          cancelUrl: 'http://localhost:3000/no',
        });
    const first = await send();
    expect(first.status).toBe(200);
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });
});

describe('Idempotency-Key on GraphQL mutations', () => {
  const CREATE = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id email } }';

  it('replays a mutation and runs it once under 20 concurrent repeats', async () => {
    const key = randomUUID();
    const address = email('gql');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => graphqlWithKey(CREATE, { input: { email: address } }, apiKey, key)),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((res) => JSON.stringify(res.body))).size).toBe(1);
    expect(answers[0]!.body.data.createCustomer.email).toBe(address);
    expect(answers.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    expect(await customersWithEmail(address)).toBe(1);
  });

  it('answers 409 in GraphQL form when the key is reused with other variables', async () => {
    const key = randomUUID();
    expect((await graphqlWithKey(CREATE, { input: { email: email() } }, apiKey, key)).status).toBe(200);
    const reused = await graphqlWithKey(CREATE, { input: { email: email() } }, apiKey, key);
    expect(reused.status).toBe(409);
    expect(reused.body).toEqual({
      errors: [
        {
          message:
            'Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request',
          extensions: { code: 'CONFLICT', statusCode: 409 },
        },
      ],
    });
  });

  it('refuses the header on every mutation whose answer carries a secret, or that is public', async () => {
    const cases: Array<[string, string, object, string | undefined]> = [
      ['createApiKey', 'mutation($a: ID!) { createApiKey(appId: $a) { apiKey } }', { a: appId }, apiKey],
      ['createApp', 'mutation { createApp(input: { name: "x" }) { apiKey } }', {}, apiKey],
      [
        'verifyMagicLink',
        'mutation($a: ID!) { verifyMagicLink(appId: $a, token: "t") { sessionToken } }',
        { a: appId },
        undefined,
      ],
      [
        'requestMagicLink',
        'mutation($a: ID!) { requestMagicLink(appId: $a, email: "a@b.co", redirectUrl: "http://localhost/x") }',
        { a: appId },
        undefined,
      ],
      [
        'switchOrganization',
        'mutation { switchOrganization(organizationId: "org_x") { sessionToken } }',
        {},
        apiKey,
      ],
      [
        'createWebhookEndpoint',
        'mutation { createWebhookEndpoint(input: { url: "http://127.0.0.1:9/x" }) { secret } }',
        {},
        apiKey,
      ],
      [
        'rotateWebhookEndpointSecret',
        'mutation { rotateWebhookEndpointSecret(id: "we_x") { secret } }',
        {},
        apiKey,
      ],
    ];
    for (const [name, query, variables, token] of cases) {
      const res = await graphqlWithKey(query, variables, token, randomUUID());
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toEqual({
        message: `Idempotency-Key is not accepted by ${name}: its answer carries a secret, or it is public`,
        extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
      });
    }
  });

  it('finds a refused mutation behind an inline fragment, a fragment spread or an alias', async () => {
    const documents = [
      'mutation($a: ID!) { ... on Mutation { k: createApiKey(appId: $a) { apiKey } } }',
      'mutation($a: ID!) { ...Keys } fragment Keys on Mutation { createApiKey(appId: $a) { apiKey } }',
      'mutation($a: ID!) { ...A } fragment A on Mutation { ...B } fragment B on Mutation { ...A createApiKey(appId: $a) { apiKey } }',
    ];
    for (const query of documents) {
      const res = await graphqlWithKey(query, { a: appId }, apiKey, randomUUID());
      expect(res.status).toBe(400);
      expect(res.body.errors[0].message).toBe(
        'Idempotency-Key is not accepted by createApiKey: its answer carries a secret, or it is public',
      );
    }
  });

  it('leaves queries alone: the header on a read neither stores nor replays anything', async () => {
    const key = randomUUID();
    const res = await graphqlWithKey('{ customers(limit: 1) { pagination { total } } }', {}, apiKey, key);
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await records(key)).toEqual([]);
  });
});
