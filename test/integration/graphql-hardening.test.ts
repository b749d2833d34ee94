import { getIntrospectionQuery, parse, validate } from 'graphql';
import { loadConfig } from '../../src/config.js';
import { depthLimitRule, estimateComplexity } from '../../src/graphql/hardening.js';
import { getSchema } from '../../src/graphql-schema.js';
import { FIELD_LIMITS } from '../../src/modules/rate-limits/field-limits.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** `__type { ofType { ofType … { name } } }`: 2 + `levels` deep. */
function deepIntrospection(levels: number): string {
  return `{ __type(name: "Query") { ${'ofType { '.repeat(levels)}name${' }'.repeat(levels)} } }`;
}

const CUSTOMER_PAGE = 'customers(limit: 100) { data { id email name metadata createdAt updatedAt } }';

describe('GraphQL depth and complexity limits', () => {
  let server: TestServer;
  let apiKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ apiKey } = await server.createApp());
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers the standard introspection query (what GraphiQL sends)', async () => {
    const res = await server.graphql(
      getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }),
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.__schema.queryType).toMatchObject({ name: 'Query' });
  });

  it('refuses an operation nested too deep with a clear error before running it', async () => {
    const res = await server.graphql(deepIntrospection(14));
    expect((await server.graphql(deepIntrospection(13))).body.errors).toBeUndefined();
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([
      {
        message: 'Introspection query is too deep: depth 16 exceeds the maximum of 15',
        locations: [{ line: 1, column: 1 }],
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED', statusCode: 400 },
      },
    ]);
  });

  it('measures data depth through fragments and inline fragments', async () => {
    const schema = await getSchema();
    const query = parse(`
      query { apps { ...A } }
      fragment A on App { ... on App { apiKeys { id } settings { autoCreateCustomer } } }
    `);
    expect(validate(schema, query, [depthLimitRule(3)])).toEqual([]);
    expect(validate(schema, query, [depthLimitRule(2)]).map((e) => e.message)).toEqual([
      'Query is too deep: depth 3 exceeds the maximum of 2',
    ]);
  });

  it('refuses an operation whose estimated cost is too high, counting page sizes', async () => {
    const aliases = Array.from({ length: 8 }, (_, i) => `c${i}: ${CUSTOMER_PAGE}`).join('\n');
    const res = await server.graphql(`{ ${aliases} }`, {}, apiKey);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([
      {
        message: 'Query is too complex: complexity 5608 exceeds the maximum of 5000',
        extensions: { code: 'QUERY_TOO_COMPLEX', statusCode: 400 },
      },
    ]);

    const allowed = await server.graphql(`{ ${aliases.split('\n').slice(0, 7).join('\n')} }`, {}, apiKey);
    expect(allowed.status).toBe(200);
    expect(allowed.body.errors).toBeUndefined();
  });

  it('takes page sizes given as variables into account', () => {
    const document = parse('query Q($n: Int) { customers(limit: $n) { data { id email } } }');
    expect(estimateComplexity(document, 'Q', { n: 100 })).toBe(1 + 100 * 3);
    // No page size given: the server returns its default page of 20, and the estimate counts that.
    expect(estimateComplexity(document, 'Q', {})).toBe(1 + 20 * 3);
  });
});

describe('GraphQL per-field limits', () => {
  let server: TestServer;
  let appId: string;
  let apiKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ appId, apiKey } = await server.createApp({ allowedCallbackUrls: 'https://app.example.com/*' }));
  });
  afterAll(async () => {
    await server.close();
  });

  it('names only root fields that exist, so a renamed operation cannot silently lose its budget', async () => {
    const schema = await getSchema();
    const rootFields = {
      ...schema.getQueryType()?.getFields(),
      ...schema.getMutationType()?.getFields(),
    };
    expect(Object.keys(FIELD_LIMITS).filter((name) => !(name in rootFields))).toEqual([]);
    expect(Object.keys(FIELD_LIMITS).sort()).toEqual([
      'createBillingPortalSession',
      'createCheckoutSession',
      'inviteToOrganization',
      'previewSubscriptionPlanChange',
      'requestMagicLink',
      'syncCustomerSubscriptions',
      'syncOrganizationSubscriptions',
      'validateCoupon',
    ]);
  });

  const REQUEST = `mutation($appId: ID!, $email: String!) {
    requestMagicLink(appId: $appId, email: $email, redirectUrl: "https://app.example.com/after") }`;

  it('allows 20 requestMagicLink calls a minute per caller, then refuses with RATE_LIMITED', async () => {
    for (let i = 0; i < 20; i++) {
      const res = await server.graphql(REQUEST, { appId, email: `field-${i}@example.com` });
      expect(res.body).toEqual({ data: { requestMagicLink: true } });
    }
    const refused = await server.graphql(REQUEST, { appId, email: 'field-20@example.com' });
    expect(refused.status).toBe(200);
    expect(refused.body).toEqual({
      data: null,
      errors: [
        {
          message: 'Rate limit exceeded for requestMagicLink: at most 20 calls per 60 seconds',
          locations: [{ line: 2, column: 5 }],
          path: ['requestMagicLink'],
          extensions: { code: 'RATE_LIMITED', statusCode: 429 },
        },
      ],
    });
    // The per-field budget is separate from the caller's request budget, which still has room.
    expect((await server.http.post('/graphql').send({ query: '{ __typename }' })).status).toBe(200);

    // Another caller (here an API key) has its own field budget.
    const other = await server.graphql(REQUEST, { appId, email: 'field-other@example.com' }, apiKey);
    expect(other.body).toEqual({ data: { requestMagicLink: true } });
  });
});

describe('introspection and GraphiQL switches', () => {
  it('are on in development and off by default in production', () => {
    expect(loadConfig({}).graphql).toEqual({ introspection: true, graphiql: true });
    const production = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://db/tollgate',
      ADMIN_TOKEN: 'a'.repeat(32),
      PUBLIC_BASE_URL: 'https://billing.example.com',
      STRIPE_SECRET_KEY: 'sk_live_x',
      STRIPE_WEBHOOK_SECRET: 'whsec_x',
      SMTP_URL: 'smtp://mail.example.com',
      MAIL_FROM: 'Billing <billing@example.com>',
      WEBHOOK_SECRET_KEY: 'dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE=',
      TRUST_PROXY: '1',
    });
    expect(production.graphql).toEqual({ introspection: false, graphiql: false });
    expect(loadConfig({ GRAPHQL_INTROSPECTION: 'true', GRAPHIQL: '1' }).graphql).toEqual({
      introspection: true,
      graphiql: true,
    });
  });

  describe('when turned off', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ env: { GRAPHQL_INTROSPECTION: 'false', GRAPHIQL: 'false' } });
    });
    afterAll(async () => {
      await server.close();
    });

    it('refuses introspection', async () => {
      const res = await server.graphql('{ __schema { queryType { name } } }');
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(/introspection is not allowed/),
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED', statusCode: 400 },
        }),
      ]);
      // Queries still work.
      expect((await server.graphql('{ __typename }')).body).toEqual({ data: { __typename: 'Query' } });
    });

    it('serves no GraphiQL page or assets', async () => {
      const page = await server.http.get('/graphql').set('accept', 'text/html');
      expect(page.headers['content-type'] ?? '').not.toMatch(/text\/html/);
      expect(page.text).not.toContain('graphiql');
      const asset = await server.http.get('/graphql/assets/graphiql.js');
      expect(asset.status).toBe(400);
      expect(asset.headers['content-type']).not.toMatch(/javascript/);
    });
  });
});
