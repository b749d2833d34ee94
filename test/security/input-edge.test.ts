import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import type { Response } from 'supertest';
import { jsonNestingExceeds } from '../../src/core/validation.js';
import { expectOpenApiResponse } from '../helpers/openapi.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { customerCount, envelopeOf, rawRequest } from './helpers.js';

let server: TestServer;
/** Every request of this app is refused: it never has a customer. */
let app: { appId: string; apiKey: string };
/** Where the control cases (accepted inputs) create their customers. */
let okApp: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer();
  app = await server.createApp();
  okApp = await server.createApp();
});
afterAll(async () => {
  await server.close();
});

const NUL = 'contains a NUL character (U+0000), which cannot be stored';
const SURROGATE = 'contains an unpaired UTF-16 surrogate, which is not valid Unicode';
const HUGE = 'is a number too large to be represented (finite doubles only)';
const DEEP = 'is nested more than 32 levels deep';
const INEXACT = 'is an integer too large to be kept exactly (at most 9007199254740991 either way)';

/** POST /v1/customers with a raw JSON text (so escapes such as `\ud800` reach the server as written). */
function createRaw(json: string | Buffer, headers: Record<string, string> = {}, key = app.apiKey) {
  return server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${key}`)
    .set('content-type', 'application/json')
    .set(headers)
    .send(json);
}

function expectEnvelope(res: Response, status: number, message: string) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: envelopeOf(status, message) });
}

/** `{"a":{"a":…{"a":1}…}}` with `levels` objects. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

describe('REST inputs PostgreSQL or JSON cannot take are a 400 at the edge', () => {
  afterEach(async () => {
    // Every refusal below happens before a service runs: nothing is ever written.
    expect(await customerCount(server, app.appId)).toBe(0);
  });

  it.each([
    ['a NUL in a body string', { email: 'a\u0000b@example.com' }, `body.email: ${NUL}`],
    [
      'a NUL in a nested value',
      { email: 'n@example.com', metadata: { note: 'x\u0000' } },
      `body.metadata.note: ${NUL}`,
    ],
    [
      'a NUL in a key',
      { email: 'n@example.com', metadata: { 'k\u0000': 1 } },
      `body.metadata: has a key that ${NUL}`,
    ],
    [
      'a NUL in an array item',
      { email: 'n@example.com', metadata: { l: ['ok', '\u0000'] } },
      `body.metadata.l[1]: ${NUL}`,
    ],
  ])('refuses %s', async (_what, body, message) => {
    expectEnvelope(await createRaw(JSON.stringify(body)), 400, message);
  });

  it.each([
    ['a lone high surrogate', '{"email":"s@example.com","name":"\\ud800"}', `body.name: ${SURROGATE}`],
    ['a lone low surrogate', '{"email":"s@example.com","name":"x\\udc00y"}', `body.name: ${SURROGATE}`],
    [
      'a lone surrogate in a key',
      '{"email":"s@example.com","metadata":{"\\udbff":1}}',
      `body.metadata: has a key that ${SURROGATE}`,
    ],
    ['1e400', '{"email":"h@example.com","metadata":{"n":1e400}}', `body.metadata.n: ${HUGE}`],
    ['-1e400', '{"email":"h@example.com","metadata":{"n":[-1e400]}}', `body.metadata.n[0]: ${HUGE}`],
    [
      '2^53 + 1',
      '{"email":"i@example.com","metadata":{"id":9007199254740993}}',
      `body.metadata.id: ${INEXACT}`,
    ],
    [
      '-(2^53)',
      '{"email":"i@example.com","metadata":{"ids":[1,-9007199254740992]}}',
      `body.metadata.ids[1]: ${INEXACT}`,
    ],
  ])('refuses %s written in the JSON text', async (_what, json, message) => {
    expectEnvelope(await createRaw(json), 400, message);
  });

  it('keeps 2^53 − 1, the largest integer JSON numbers hold exactly, as written', async () => {
    const created = await createRaw(
      '{"email":"max-int@example.com","metadata":{"id":9007199254740991,"low":-9007199254740991}}',
      {},
      okApp.apiKey,
    );
    expect(created.status).toBe(201);
    expect(created.body.metadata).toEqual({ id: 9007199254740991, low: -9007199254740991 });
  });

  it('accepts a paired surrogate (an emoji) and 32 levels of nesting, refuses 33', async () => {
    // 33 objects: the body, then `metadata` and 31 below it.
    const tooDeep = { email: 'deep@example.com', metadata: nested(32) };
    expectEnvelope(await createRaw(JSON.stringify(tooDeep)), 400, `body: ${DEEP}`);
    const body = { email: 'deep@example.com', name: '😀', metadata: nested(31) };
    const ok = await createRaw(JSON.stringify(body), {}, okApp.apiKey);
    expect(ok.status).toBe(201);
    expect(ok.body.name).toBe('😀');
    expect(ok.body.metadata).toEqual(body.metadata);
  });

  it('refuses nesting far beyond the limit before parsing it', async () => {
    const json = `{"email":"d@example.com","metadata":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    expectEnvelope(await createRaw(json), 400, `body: ${DEEP}`);
  });

  it('counts brackets inside strings as text, not nesting', async () => {
    const res = await createRaw(
      JSON.stringify({ email: 'b@example.com', name: '['.repeat(100), metadata: { '{{': '}}' } }),
      {},
      okApp.apiKey,
    );
    expect(res.status).toBe(201);
  });

  it('refuses a NUL in a query parameter, in any position', async () => {
    const auth = `Bearer ${app.apiKey}`;
    for (const query of ['email=%00', 'email=a%00', 'email[]=%00', 'limit=1%00']) {
      const res = await server.http.get(`/v1/customers?${query}`).set('authorization', auth);
      expectEnvelope(res, 400, expect.stringMatching(/^query\.(email|limit|<key>): contains a NUL/) as any);
    }
    const key = await server.http.get('/v1/customers?e%00mail=x').set('authorization', auth);
    expectEnvelope(key, 400, `query: has a key that ${NUL}`);
  });

  it.each([
    ['/v1/customers/cus_%00', `path: ${NUL}`],
    ['/v1/customers/%00/x', `path: ${NUL}`],
    ['/v1/customers/%FF', 'path: has malformed percent-encoding'],
    ['/v1/customers/%E0%A4', 'path: has malformed percent-encoding'],
    ['/v1/customers/%ED%A0%80', 'path: has malformed percent-encoding'],
    ['/v1/customers/100%', 'path: has malformed percent-encoding'],
    ['/v1/entitlements/check/%zz?customerId=x', 'path: has malformed percent-encoding'],
    ['/v1/apps/%C0/auth/session', 'path: has malformed percent-encoding'],
  ])('refuses the path %s', async (path, message) => {
    const res = await rawRequest(server, {
      method: 'GET',
      path,
      headers: { authorization: `Bearer ${app.apiKey}` },
    });
    expect(res.status).toBe(400);
    expect(res.json()).toEqual(envelopeOf(400, message));
  });

  it('answers a plain JSON body (read directly) exactly as body-parser answers the same body', async () => {
    const bodies = [
      '{}',
      '[]',
      '\uFEFF{"email": 3}',
      '  \n{"email": "x"}',
      '   ',
      '"text"',
      '12',
      'null',
      '{"email":',
      '{"email": "a@example.com",}',
      `{"email":"d@example.com","metadata":${'['.repeat(40)}${']'.repeat(40)}}`,
      '{"email":"h@example.com","metadata":{"n":1e400}}',
      '{"email":"a\\u0000b@example.com"}',
    ];
    for (const body of bodies) {
      // `application/json` is read directly; the same type spelled in capitals goes through body-parser.
      const direct = await createRaw(body);
      const parsed = await createRaw(body, { 'content-type': 'Application/JSON' });
      expect({ body, status: direct.status, answer: direct.body }).toEqual({
        body,
        status: parsed.status,
        answer: parsed.body,
      });
      expect({ body, status: direct.status }).toEqual({ body, status: 400 });
    }
    const created = await createRaw(JSON.stringify({ email: 'direct@example.com' }), {}, okApp.apiKey);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email: 'direct@example.com' });
    const charset = await createRaw(
      JSON.stringify({ email: 'charset@example.com' }),
      { 'content-type': 'application/json; charset=utf-8' },
      okApp.apiKey,
    );
    expect(charset.status).toBe(201);
  });

  it('refuses a body that is not in its Content-Encoding, and an unknown coding', async () => {
    const json = JSON.stringify({ email: 'enc@example.com' });
    for (const coding of ['gzip', 'deflate', 'br']) {
      expectEnvelope(
        await createRaw(json, { 'content-encoding': coding }),
        400,
        'Request body does not match its Content-Encoding',
      );
    }
    const truncated = await rawRequest(server, {
      method: 'POST',
      path: '/v1/customers',
      headers: {
        authorization: `Bearer ${app.apiKey}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body: gzipSync(json).subarray(0, 12),
    });
    expect(truncated.status).toBe(400);
    expect(truncated.json()).toEqual(envelopeOf(400, 'Request body does not match its Content-Encoding'));
    expectEnvelope(
      await createRaw(json, { 'content-encoding': 'compress' }),
      400,
      'Unsupported Content-Encoding "compress": send identity, gzip, deflate, br or zstd',
    );
  });

  it('still takes a body in the coding it names', async () => {
    // Node's client, because superagent would serialise a Buffer sent as JSON.
    const res = await rawRequest(server, {
      method: 'POST',
      path: '/v1/customers',
      headers: {
        authorization: `Bearer ${okApp.apiKey}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body: gzipSync(JSON.stringify({ email: 'gz@example.com' })),
    });
    expect(res.status).toBe(201);
    expect(res.json().email).toBe('gz@example.com');
  });

  it('refuses a NUL or lone surrogate anywhere in a body, whatever the field (property)', async () => {
    const poison = fc.constantFrom('\u0000', '\ud800', '\udfff', 'a\u0000b', '\udc00\ud800');
    const field = fc.constantFrom('email', 'name', 'metadata.k', 'metadata.deep.k', 'metadata.list.0');
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 8 }),
        poison,
        fc.string({ maxLength: 8 }),
        field,
        async (pre, bad, post, at) => {
          const body: any = {
            email: 'p@example.com',
            name: 'n',
            metadata: { k: 'v', deep: { k: 'v' }, list: ['v'] },
          };
          const path = at.split('.');
          let target = body;
          for (const step of path.slice(0, -1)) target = target[step];
          target[path.at(-1)!] = `${pre}${bad}${post}`;
          const res = await createRaw(JSON.stringify(body));
          expect(res.status).toBe(400);
          expect(res.body.statusCode).toBe(400);
          expect(res.body.error).toBe('Bad Request');
          expect(res.body.message).toMatch(
            /^body\.(email|name|metadata\.k|metadata\.deep\.k|metadata\.list\[0\]): contains (a NUL|an unpaired)/,
          );
          expectOpenApiResponse(res);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('GraphQL argument values and variables', () => {
  const create = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }';

  afterEach(async () => {
    expect(await customerCount(server, app.appId)).toBe(0);
  });

  function expectBadUserInput(res: { status: number; body: any }, message: string) {
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([{ message, extensions: { code: 'BAD_USER_INPUT', statusCode: 400 } }]);
  }

  it.each([
    ['a NUL in a variable', { email: 'a\u0000@example.com' }, `variables.input.email: ${NUL}`],
    [
      'a NUL in a metadata key',
      { email: 'v@example.com', metadata: { 'x\u0000': 1 } },
      `variables.input.metadata: has a key that ${NUL}`,
    ],
    ['a lone surrogate', { email: 'v@example.com', name: 'a\ud800' }, `variables.input.name: ${SURROGATE}`],
  ])('answers BAD_USER_INPUT for %s', async (_what, input, message) => {
    expectBadUserInput(await server.graphql(create, { input }, app.apiKey), message);
  });

  it('answers BAD_USER_INPUT for a NUL written as an escape in the document, every time it is sent', async () => {
    // The second request gets the handler's cached document, whose verdict is remembered, not skipped.
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await server.graphql(
        'mutation { createCustomer(input: { email: "a\\u0000b@example.com" }) { id } }',
        undefined,
        app.apiKey,
      );
      expectBadUserInput(res, `argument "input": ${NUL}`);
    }
  });

  it('answers BAD_USER_INPUT for a number literal beyond a double in a JSON argument', async () => {
    const res = await server.graphql(
      'mutation { createCustomer(input: { email: "f@example.com", metadata: { n: 1e400 } }) { id } }',
      undefined,
      app.apiKey,
    );
    expectBadUserInput(res, `argument "input": ${HUGE}`);
  });

  it('answers BAD_USER_INPUT for a NUL in variables sent in a GET query string', async () => {
    const res = await server.http
      .get('/graphql')
      .query({
        query: 'query($e: String) { customers(email: $e) { data { id } } }',
        variables: JSON.stringify({ e: '\u0000' }),
      })
      .set('authorization', `Bearer ${app.apiKey}`)
      .set('apollo-require-preflight', 'true');
    expectBadUserInput(res, `variables.e: ${NUL}`);
  });

  it.each([
    ['malformed JSON', '{"query":', 'Malformed JSON in request body'],
    ['1e400 in variables', '{"query":"{ __typename }","variables":{"n":1e400}}', `body.variables.n: ${HUGE}`],
    [
      'deep variables',
      `{"query":"{ __typename }","variables":{"v":${'['.repeat(40)}${']'.repeat(40)}}}`,
      `body: ${DEEP}`,
    ],
  ])('answers the envelope when the body itself fails (%s)', async (_what, json, message) => {
    const res = await server.http
      .post('/graphql')
      .set('authorization', `Bearer ${app.apiKey}`)
      .set('content-type', 'application/json')
      .send(json);
    expectEnvelope(res, 400, message);
  });

  it('answers the envelope for a body that is not in its Content-Encoding', async () => {
    const res = await server.http
      .post('/graphql')
      .set('content-type', 'application/json')
      .set('content-encoding', 'gzip')
      .send('{"query":"{ __typename }"}');
    expectEnvelope(res, 400, 'Request body does not match its Content-Encoding');
  });
});

describe('two Authorization headers', () => {
  it('are refused with 400 on /v1 and /graphql, and nothing is written', async () => {
    const auth = `Bearer ${app.apiKey}`;
    for (const authorization of [
      [auth, auth],
      [auth, 'Bearer tg_sk_other'],
      ['Bearer tg_sk_other', auth],
    ]) {
      const rest = await rawRequest(server, {
        method: 'POST',
        path: '/v1/customers',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'twice@example.com' }),
      });
      expect(rest.status).toBe(400);
      expect(rest.json()).toEqual(envelopeOf(400, 'Authorization header must be sent at most once'));
      expect(rest.headers['x-ratelimit-limit']).toBeDefined();

      const graphql = await rawRequest(server, {
        method: 'POST',
        path: '/graphql',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'mutation { createCustomer(input: { email: "twice@example.com" }) { id } }',
        }),
      });
      expect(graphql.status).toBe(400);
      expect(graphql.json()).toEqual(envelopeOf(400, 'Authorization header must be sent at most once'));
    }
    expect(await customerCount(server, app.appId)).toBe(0);
  });

  it('leaves a single header alone', async () => {
    const res = await rawRequest(server, {
      method: 'GET',
      path: '/v1/customers',
      headers: { Authorization: `Bearer ${app.apiKey}` },
    });
    expect(res.status).toBe(200);
  });
});

describe('the nesting scan before parsing', () => {
  /** Objects and arrays nested in a parsed value, counted the slow, obvious way. */
  const depthOf = (value: unknown): number =>
    typeof value === 'object' && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;

  it('agrees with the depth of the parsed value, brackets and escapes inside strings included (property)', () => {
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', '\u0000', 'é') });
    const value = fc.letrec<{ v: unknown }>((tie) => ({
      v: fc.oneof(
        { depthSize: 'medium' },
        text,
        fc.integer(),
        fc.array(tie('v'), { maxLength: 3 }),
        fc.dictionary(text, tie('v'), { maxKeys: 3 }),
      ),
    })).v;
    fc.assert(
      fc.property(value, fc.integer({ min: 0, max: 6 }), (v, max) => {
        const raw = Buffer.from(JSON.stringify(v), 'utf8');
        expect(jsonNestingExceeds(raw, max)).toBe(depthOf(v) > max);
      }),
      { numRuns: 500 },
    );
  });
});
