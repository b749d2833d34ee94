import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import fc from 'fast-check';
import {
  buildSchema,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  getNamedType,
  getNullableType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
} from 'graphql';
import { createAuthApp } from '../helpers/auth-fixtures.js';
import { expectOpenApiResponse, matchOpenApiPath } from '../helpers/openapi.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { sessionTokenFor } from '../helpers/stripe-fixtures.js';
import { type RawAnswer, rawRequest } from './helpers.js';

/**
 * Hostile input on every /v1 route and every GraphQL root field: nothing answers 500, every REST error
 * is the envelope (and what the OpenAPI document says), every GraphQL error carries a code and a
 * client status. Runs are bounded so the file takes seconds, not minutes.
 */

let server: TestServer;
let apiKey: string;
let appId: string;
let sessionToken: string;
let customerId: string;

beforeAll(async () => {
  server = await startTestServer({
    env: { RATE_LIMIT_API_KEY: '1000000', RATE_LIMIT_SESSION: '1000000' },
  });
  ({ appId, apiKey } = await createAuthApp(server, { allowedCallbackUrls: 'https://app.example.com/*' }));
  const created = await server.http
    .post('/v1/customers')
    .set('authorization', `Bearer ${apiKey}`)
    .send({ email: 'fuzz@example.com' });
  customerId = created.body.id;
  sessionToken = await sessionTokenFor(server, appId, customerId);
});
afterAll(async () => {
  await server.close();
});

// ---------------------------------------------------------------------------------------------------
// Hostile values

/** Any UTF-16 code unit, lone surrogates and NUL included. */
const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

const hostileString = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff',
    'x\udc00\ud800',
    '%FF',
    '%00',
    '%',
    '😀',
    '',
    ' ',
    'x'.repeat(3000),
    '../../etc/passwd',
    "'; drop table customer; --",
    '\\',
    '__proto__',
    'constructor',
    'nope@example.com',
    'a@b',
    'https://app.example.com/cb',
    'javascript:alert(1)',
  ),
  fc.string({ unit: anyCodeUnit, maxLength: 12 }),
);

/** JSON text (not values: `1e400` and deep nesting only exist as text), sometimes of the wrong type. */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString.map((s) => JSON.stringify(s)),
    fc.constantFrom(
      '1e400',
      '-1e400',
      '1e-400',
      '123456789012345678901234567890',
      '-1',
      '0',
      '1.5',
      '2147483648',
    ),
    fc.constantFrom('null', 'true', 'false', '{}', '[]'),
    fc.constantFrom(40, 100, 5000).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
    fc.array(tie('value'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(fc.tuple(hostileString, tie('value')), { maxLength: 3 })
      .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).value;

/** A body: the route's fields with hostile values (keys sometimes repeated), or hostile text outright. */
const bodyFor = (fields: readonly string[]) =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .array(fc.tuple(fc.constantFrom(...fields, 'unknownField'), jsonText), { maxLength: 5 })
        .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
    },
    { weight: 1, arbitrary: jsonText },
    { weight: 1, arbitrary: fc.constantFrom('{"email":', '', 'not json', '{"a":1}}', '\u0000') },
  );

/** Whether text can be percent-encoded at all (no lone surrogates). */
function wellFormed(text: string): boolean {
  try {
    encodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** A query-string value as sent: percent-encoded text, raw malformed escapes, or encoded lone surrogates. */
const queryValue = fc.oneof(
  hostileString.filter((s) => wellFormed(s)).map((s) => encodeURIComponent(s)),
  fc.constantFrom('%FF', '%', '%E0%A4', '%ED%A0%80', '%00', '1e400', '-1', '99999999999999999999'),
);

const queryFor = (names: readonly string[]) =>
  fc
    .array(fc.tuple(fc.constantFrom(...names, 'unknown'), fc.constantFrom('', '[]', '[0]'), queryValue), {
      maxLength: 4,
    })
    .map((entries) => entries.map(([name, suffix, value]) => `${name}${suffix}=${value}`).join('&'));

/** A path parameter as sent. */
const pathParam = fc.oneof(
  fc.constantFrom(
    '%00',
    'cus_%00',
    '%FF',
    '%ED%A0%80',
    '%2F',
    '%2e%2e',
    'x'.repeat(3000),
    '%F0%9F%98%80',
    '__proto__',
  ),
  hostileString.filter((s) => wellFormed(s) && s.length > 0).map((s) => encodeURIComponent(s)),
);

// ---------------------------------------------------------------------------------------------------
// REST

type Credential = 'apiKey' | 'session' | 'none';

interface Route {
  readonly method: 'GET' | 'POST' | 'PATCH';
  /** With `{param}` placeholders; `{app}` is the test app's id unless fuzzed. */
  readonly path: string;
  readonly query?: readonly string[];
  readonly body?: readonly string[];
  readonly credentials: readonly Credential[];
}

/** Every route of src/rest/v1.ts and its module routers (and schema/openapi.yaml), plus the webhook. */
const ROUTES: readonly Route[] = [
  {
    method: 'GET',
    path: '/v1/customers',
    query: ['email', 'limit', 'offset'],
    credentials: ['apiKey', 'session', 'none'],
  },
  {
    method: 'POST',
    path: '/v1/customers',
    body: ['email', 'name', 'metadata'],
    credentials: ['apiKey', 'session'],
  },
  { method: 'GET', path: '/v1/customers/{id}', credentials: ['apiKey'] },
  { method: 'PATCH', path: '/v1/customers/{id}', body: ['name', 'metadata'], credentials: ['apiKey'] },
  {
    method: 'GET',
    path: '/v1/subscriptions/current',
    query: ['customerId', 'organizationId'],
    credentials: ['apiKey', 'session'],
  },
  {
    method: 'POST',
    path: '/v1/subscriptions/{id}/cancel',
    body: ['atPeriodEnd'],
    credentials: ['apiKey', 'session'],
  },
  { method: 'POST', path: '/v1/subscriptions/{id}/pause', body: [], credentials: ['apiKey', 'session'] },
  { method: 'POST', path: '/v1/subscriptions/{id}/resume', body: [], credentials: ['apiKey', 'session'] },
  {
    method: 'GET',
    path: '/v1/entitlements',
    query: ['customerId', 'organizationId'],
    credentials: ['apiKey', 'session'],
  },
  {
    method: 'GET',
    path: '/v1/entitlements/check/{feature}',
    query: ['customerId', 'organizationId'],
    credentials: ['apiKey', 'session'],
  },
  {
    method: 'POST',
    path: '/v1/checkout/session',
    body: [
      'planId',
      'successUrl',
      'cancelUrl',
      'customerId',
      'email',
      'organizationId',
      'couponCode',
      'collectBillingAddress',
      'metadata',
    ],
    credentials: ['apiKey', 'session'],
  },
  {
    method: 'POST',
    path: '/v1/apps/{app}/auth/magic-link',
    body: ['email', 'redirectUrl'],
    credentials: ['none'],
  },
  { method: 'POST', path: '/v1/apps/{app}/auth/verify', body: ['token'], credentials: ['none'] },
  {
    method: 'GET',
    path: '/v1/apps/{app}/auth/verify',
    query: ['token', 'redirect', 'appId'],
    credentials: ['none'],
  },
  { method: 'GET', path: '/v1/apps/{app}/auth/session', credentials: ['session', 'apiKey'] },
  { method: 'POST', path: '/v1/webhooks/stripe', body: ['id', 'type', 'data'], credentials: ['none'] },
];

function authorization(credential: Credential): Record<string, string> {
  if (credential === 'apiKey') return { authorization: `Bearer ${apiKey}` };
  if (credential === 'session') return { authorization: `Bearer ${sessionToken}` };
  return {};
}

function expectRestAnswer(res: RawAnswer, method: string, path: string) {
  expect(res.status).not.toBe(500);
  expect(res.status).toBeLessThan(500 + (path.startsWith('/v1/checkout') ? 5 : 0));
  const body = res.text ? res.json() : undefined;
  if (res.status >= 400) {
    expect(body).toEqual({
      statusCode: res.status,
      message: expect.any(String),
      error: STATUS_CODES[res.status],
    });
  }
  if (matchOpenApiPath(path)) {
    expectOpenApiResponse(
      { status: res.status, headers: res.headers as Record<string, string>, body, text: res.text },
      method,
      path,
    );
  }
}

describe('fuzzing every /v1 route', () => {
  it.each(ROUTES.map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s never answers 500 and answers errors with the envelope',
    async (_name, route) => {
      const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            params: fc.tuple(
              ...params.map((name) => (name === 'app' ? fc.oneof(fc.constant(appId), pathParam) : pathParam)),
            ),
            query: route.query ? queryFor(route.query) : fc.constant(''),
            body: route.body ? bodyFor(route.body) : fc.constant(undefined),
            credential: fc.constantFrom(...route.credentials),
            duplicateAuthorization: fc.boolean().map((b) => b && route.credentials[0] !== 'none'),
          }),
          async ({ params: values, query, body, credential, duplicateAuthorization }) => {
            let i = 0;
            const path = route.path.replace(/\{\w+\}/g, () => String(values[i++]));
            const target = query ? `${path}?${query}` : path;
            const headers: Record<string, string | string[]> = { ...authorization(credential) };
            if (duplicateAuthorization)
              headers.authorization = [`Bearer ${apiKey}`, `Bearer ${sessionToken}`];
            if (body !== undefined) headers['content-type'] = 'application/json';
            if (route.path === '/v1/webhooks/stripe') headers['stripe-signature'] = 't=1,v1=00';
            const res = await rawRequest(server, { method: route.method, path: target, headers, body });
            expectRestAnswer(res, route.method, target);
          },
        ),
        { numRuns: 30 },
      );
    },
  );
});

// ---------------------------------------------------------------------------------------------------
// GraphQL

const schema = buildSchema(readFileSync('schema/schema.graphql', 'utf8'));

/** A JSON text for a GraphQL input type: well-typed with hostile leaves, or of the wrong type outright. */
function variableFor(type: GraphQLInputType, depth = 0): fc.Arbitrary<string> {
  const wrong = fc.oneof(jsonText, fc.constant('null'));
  const nullable = getNullableType(type);
  let right: fc.Arbitrary<string>;
  if (isListType(nullable)) {
    right = fc
      .array(variableFor(nullable.ofType, depth + 1), { maxLength: 3 })
      .map((items) => `[${items.join(',')}]`);
  } else if (isInputObjectType(nullable)) {
    const fields = Object.values(nullable.getFields());
    right =
      depth > 3
        ? fc.constant('{}')
        : fc.tuple(...fields.map((f) => fc.option(variableFor(f.type, depth + 1), { nil: undefined }))).map(
            (values) =>
              `{${fields
                .map((f, i) =>
                  values[i] === undefined ? undefined : `${JSON.stringify(f.name)}:${values[i]}`,
                )
                .filter(Boolean)
                .join(',')}}`,
          );
  } else if (isEnumType(nullable)) {
    right = fc.constantFrom(...nullable.getValues().map((v) => JSON.stringify(v.name)), '"NOT_A_VALUE"');
  } else if (isScalarType(nullable) && nullable.name === 'Int') {
    right = fc.constantFrom('0', '-1', '2147483647', '2147483648', '1e400', '1.5', '"1"');
  } else if (isScalarType(nullable) && nullable.name === 'Boolean') {
    right = fc.constantFrom('true', 'false', '"true"', '0');
  } else if (isScalarType(nullable) && (nullable.name === 'JSON' || nullable.name === 'JSONObject')) {
    right = jsonText;
  } else {
    right = hostileString.map((s) => JSON.stringify(s));
  }
  return isNonNullType(type)
    ? fc.oneof({ weight: 5, arbitrary: right }, { weight: 1, arbitrary: wrong })
    : fc.oneof(right, wrong);
}

/** Hostile values written into the document itself instead of variables. */
const inlineLiteral = fc.oneof(
  hostileString.map((s) => JSON.stringify(s)),
  fc.constantFrom(
    '1e400',
    '123456789012345678901234567890',
    '"\\u0000"',
    '"\\ud800"',
    '{a: "\\u0000"}',
    '[1e400]',
  ),
);

const ROOT_FIELDS = [
  ...Object.values(schema.getQueryType()!.getFields()).map((f) => ['query', f] as const),
  ...Object.values(schema.getMutationType()!.getFields())
    // Takes no input, and would end the session the other runs use.
    .filter((f) => f.name !== 'revokeSession')
    .map((f) => ['mutation', f] as const),
];

function operationFor(
  kind: 'query' | 'mutation',
  field: GraphQLField<unknown, unknown>,
  inline: Map<string, string>,
) {
  const args = field.args as readonly GraphQLArgument[];
  const declared = args.filter((a) => !inline.has(a.name));
  const variables = declared.length ? `(${declared.map((a) => `$${a.name}: ${a.type}`).join(', ')})` : '';
  const passed = args.length
    ? `(${args.map((a) => `${a.name}: ${inline.get(a.name) ?? `$${a.name}`}`).join(', ')})`
    : '';
  const selection = isCompositeType(getNamedType(field.type)) ? ' { __typename }' : '';
  return `${kind}${variables} { ${field.name}${passed}${selection} }`;
}

describe('fuzzing every GraphQL root field', () => {
  it('has root fields to fuzz', () => {
    expect(ROOT_FIELDS.length).toBeGreaterThan(30);
  });

  it.each(ROOT_FIELDS.map(([kind, field]) => [`${kind} ${field.name}`, kind, field] as const))(
    '%s never fails with a 500 and codes every error',
    async (_name, kind, field) => {
      const args = field.args as readonly GraphQLArgument[];
      await fc.assert(
        fc.asyncProperty(
          fc.tuple(
            ...args.map((a) =>
              fc.tuple(variableFor(a.type), fc.option(inlineLiteral, { freq: 5, nil: undefined })),
            ),
          ),
          fc.constantFrom('apiKey', 'session', 'admin', 'none'),
          async (values, credential) => {
            const inline = new Map<string, string>();
            const variables: string[] = [];
            args.forEach((a, i) => {
              const [variable, literal] = values[i]!;
              if (literal !== undefined) inline.set(a.name, literal);
              else variables.push(`${JSON.stringify(a.name)}:${variable}`);
            });
            const query = operationFor(kind, field, inline);
            const token =
              credential === 'apiKey'
                ? apiKey
                : credential === 'session'
                  ? sessionToken
                  : credential === 'admin'
                    ? server.adminToken
                    : undefined;
            const res = await rawRequest(server, {
              method: 'POST',
              path: '/graphql',
              headers: {
                'content-type': 'application/json',
                ...(token ? { authorization: `Bearer ${token}` } : {}),
              },
              body: `{"query":${JSON.stringify(query)},"variables":{${variables.join(',')}}}`,
            });
            expect(res.status).not.toBe(500);
            const body = res.json();
            if (body.statusCode !== undefined) {
              // Refused before GraphQL could read it (e.g. 1e400 or deep nesting in the variables): the envelope.
              expect(body).toEqual({
                statusCode: res.status,
                message: expect.any(String),
                error: STATUS_CODES[res.status],
              });
              expect(res.status).toBe(400);
              return;
            }
            for (const error of body.errors ?? []) {
              // A validation error also names the input fields it concerns.
              const named = error.extensions.fields === undefined ? {} : { fields: expect.any(Array) };
              expect(error.extensions).toEqual({
                code: expect.any(String),
                statusCode: expect.any(Number),
                ...named,
              });
              for (const name of error.extensions.fields ?? []) expect(name).toEqual(expect.any(String));
              expect(error.extensions.code).not.toBe('INTERNAL_SERVER_ERROR');
              expect(error.extensions.statusCode).toBeLessThan(
                500 + (field.name === 'createCheckoutSession' ? 5 : 0),
              );
            }
          },
        ),
        { numRuns: 12 },
      );
    },
  );
});
