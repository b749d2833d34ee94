import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { customerCount, envelopeOf } from './helpers.js';

let server: TestServer;
let app: { appId: string; apiKey: string };
let okApp: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer();
  app = await server.createApp({ allowedCallbackUrls: 'https://app.example.com/*' });
  okApp = await server.createApp();
});
afterAll(async () => {
  await server.close();
});

const LOCAL = 'email: the part before @ must be at most 64 characters';
const LABEL = 'email: each dot-separated part of the domain must be at most 63 characters';
const WHOLE = 'email: must be at most 254 characters';
const NAME = 'name: Invalid input: expected string, received number';

/** A 254-character address within every other limit: 64 @ 63.63.58.io */
const LONGEST = `${'l'.repeat(64)}@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(58)}.io`;

const OVER = [
  ['a 65-character local part', `${'l'.repeat(65)}@example.com`, LOCAL],
  ['a 64-character domain label', `user@${'d'.repeat(64)}.example.com`, LABEL],
  ['a 64-character top-level label', `user@example.${'t'.repeat(64)}`, LABEL],
  [
    'a 255-character address',
    `${'l'.repeat(64)}@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(59)}.io`,
    WHOLE,
  ],
] as const;

describe('e-mail addresses beyond RFC 5321 limits are refused with a 400 naming the limit', () => {
  it('the longest address within every limit is accepted', async () => {
    expect(LONGEST).toHaveLength(254);
    const res = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${okApp.apiKey}`)
      .send({ email: LONGEST });
    expect(res.status).toBe(201);
    expect(res.body.email).toBe(LONGEST);
  });

  it.each(OVER)('POST /v1/customers refuses %s', async (_what, email, message) => {
    const res = await server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${app.apiKey}`)
      .send({ email });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: envelopeOf(400, message) });
    expect(await customerCount(server, app.appId)).toBe(0);
  });

  it.each(OVER)('the magic-link request refuses %s and sends nothing', async (_what, email, message) => {
    const res = await server.http
      .post(`/v1/apps/${app.appId}/auth/magic-link`)
      .send({ email, redirectUrl: 'https://app.example.com/cb' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: envelopeOf(400, message) });
    const mailbox = await server.http.get('/dev/mailbox.json');
    expect(mailbox.body.messages.filter((m: { to: string }) => m.to === email)).toEqual([]);
    expect(await customerCount(server, app.appId)).toBe(0);
  });

  it.each(OVER)('the checkout refuses %s', async (_what, email, message) => {
    const res = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${app.apiKey}`)
      .send({
        email,
        planId: 'pro',
        successUrl: 'https://app.example.com/ok',
        cancelUrl: 'https://app.example.com/no',
      });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: envelopeOf(400, message) });
  });

  it.each(OVER)('GraphQL createCustomer refuses %s', async (_what, email, message) => {
    const res = await server.graphql(
      'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }',
      { input: { email } },
      app.apiKey,
    );
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message,
        extensions: { code: 'BAD_USER_INPUT', statusCode: 400, fields: ['email'] },
      }),
    ]);
    expect(await customerCount(server, app.appId)).toBe(0);
  });

  it('names the local-part limit for every length over 64, and never for 64 or less (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 120 }),
        fc.constantFrom('a', 'Z', '9', '+', '_'),
        async (length, c) => {
          const email = `${c.repeat(length)}@example.com`;
          const res = await server.http
            .post('/v1/customers')
            .set('authorization', `Bearer ${app.apiKey}`)
            .send({ email, name: 1 });
          // `name: 1` makes every request fail validation, so nothing is created either way.
          expect(res.status).toBe(400);
          if (length > 64) expect(res.body.message).toBe(`${LOCAL}; ${NAME}`);
          else expect(res.body.message).toBe(NAME);
        },
      ),
      { numRuns: 40 },
    );
    expect(await customerCount(server, app.appId)).toBe(0);
  });
});
