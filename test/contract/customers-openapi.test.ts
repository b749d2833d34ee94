import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { expectOpenApiResponse, matchOpenApiPath, type ResponseUnderTest } from '../helpers/openapi.js';

/**
 * The document itself, and the checker every REST test relies on: if the checker accepted anything, the
 * tests that call it would prove nothing. That it accepts conforming answers needs no test of its own:
 * `server.http` runs it on every answer to a documented path, so each passing REST test shows it.
 */
const document = YAML.parse(readFileSync('schema/openapi.yaml', 'utf8'));

const CUSTOMER = {
  id: 'cus_abc',
  email: 'a@example.com',
  name: null,
  metadata: { plan: 'gold' },
  paymentCustomerId: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};

const RATE_LIMIT_HEADERS = {
  'x-ratelimit-limit': '1000',
  'x-ratelimit-remaining': '999',
  'x-ratelimit-reset': '1767225660',
};

function json(status: number, body: unknown, headers: Record<string, string> = {}): ResponseUnderTest {
  return {
    status,
    body,
    headers: { 'content-type': 'application/json; charset=utf-8', ...RATE_LIMIT_HEADERS, ...headers },
  };
}

describe('schema/openapi.yaml', () => {
  it('is OpenAPI 3.1 and describes every /v1 path of the interface with its methods', () => {
    expect(document.openapi).toBe('3.1.0');
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, item]) =>
        Object.keys(item)
          .filter((k) => ['get', 'post', 'patch', 'put', 'delete'].includes(k))
          .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.filter((o) => !o.includes(' /v1')).sort()).toEqual(['GET /', 'GET /openapi.yaml']);
    expect(operations.filter((o) => o.includes(' /v1')).sort()).toEqual(
      [
        'GET /v1',
        'GET /v1/customers',
        'POST /v1/customers',
        'GET /v1/customers/{id}',
        'PATCH /v1/customers/{id}',
        'DELETE /v1/customers/{id}',
        'GET /v1/subscriptions/current',
        'POST /v1/subscriptions/{id}/cancel',
        'POST /v1/subscriptions/{id}/pause',
        'POST /v1/subscriptions/{id}/resume',
        'GET /v1/entitlements',
        'GET /v1/entitlements/check/{feature}',
        'POST /v1/checkout/session',
        'POST /v1/apps/{appId}/auth/magic-link',
        'POST /v1/apps/{appId}/auth/verify',
        'GET /v1/apps/{appId}/auth/verify',
        'GET /v1/apps/{appId}/auth/session',
        'POST /v1/webhooks/stripe',
        // The client operations whose paths the interface leaves open (Tollgate's choices).
        'GET /v1/subscriptions',
        'GET /v1/invoices',
        'POST /v1/coupons/validate',
        'GET /v1/organizations',
        'POST /v1/apps/{appId}/auth/switch-organization',
        'POST /v1/apps/{appId}/auth/sign-out',
        'GET /v1/webhook-endpoints',
        'POST /v1/webhook-endpoints',
        'GET /v1/webhook-endpoints/{id}',
        'PATCH /v1/webhook-endpoints/{id}',
        'DELETE /v1/webhook-endpoints/{id}',
        'POST /v1/webhook-endpoints/{id}/rotate-secret',
        'GET /v1/webhook-endpoints/{id}/deliveries',
        'POST /v1/webhook-deliveries/{id}/retry',
        // Billing moves (Tollgate's choices).
        'POST /v1/subscriptions/{id}/change-plan',
        'POST /v1/subscriptions/{id}/change-plan/preview',
        'POST /v1/billing-portal/session',
        'POST /v1/customers/{id}/sync',
        'POST /v1/organizations/{id}/sync',
        // Metered features (Tollgate's choices).
        'POST /v1/usage',
        'POST /v1/usage/{id}/refund',
        'POST /v1/credit-grants',
        'GET /v1/credit-grants',
        'POST /v1/credit-grants/{id}/void',
        'GET /v1/balances',
        // Subscription analytics (Tollgate's choice).
        'GET /v1/analytics',
        // Entitlement tokens (Tollgate's choices).
        'POST /v1/apps/{appId}/auth/entitlement-token',
        'GET /v1/apps/{appId}/.well-known/jwks.json',
        // Seats and invitations of organizations (Tollgate's choices).
        'GET /v1/organizations/{id}/seats',
        'POST /v1/organizations/{id}/invitations',
        'GET /v1/organizations/{id}/invitations',
        'DELETE /v1/organizations/{id}/invitations/{invitationId}',
      ].sort(),
    );
  });

  // Stripe's notification receiver is the one path outside the rate limits (a refused delivery would
  // only come back later), so its answers are the envelope without the headers.
  // The service index and this document are served outside /v1, like the health probes.
  const UNLIMITED = new Set(['/v1/webhooks/stripe', '/', '/openapi.yaml']);

  it('documents the error envelope and the rate-limit headers on every rate-limited response', () => {
    const resolve = (node: any): any =>
      node?.$ref
        ? resolve(
            node.$ref
              .slice(2)
              .split('/')
              .reduce((at: any, key: string) => at[key.replace(/~1/g, '/').replace(/~0/g, '~')], document),
          )
        : node;
    for (const [path, item] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (method === 'parameters') continue;
        for (const [status, raw] of Object.entries<any>(operation.responses)) {
          const response = resolve(raw);
          const where = `${method.toUpperCase()} ${path} ${status}`;
          expect([where, Object.keys(response.headers ?? {}).sort()]).toEqual([
            where,
            UNLIMITED.has(path)
              ? []
              : expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
          ]);
          if (Number(status) >= 400) {
            expect([where, response.content['application/json'].schema]).toEqual([
              where,
              { $ref: '#/components/schemas/Error' },
            ]);
          }
        }
        expect([`${method} ${path}`, operation.responses['429']]).toEqual([
          `${method} ${path}`,
          UNLIMITED.has(path) ? undefined : { $ref: '#/components/responses/TooManyRequests' },
        ]);
      }
    }
  });

  it("marks Tollgate's choices", () => {
    const text = readFileSync('schema/openapi.yaml', 'utf8');
    expect(text.match(/x-tollgate-choice: true/g)!.length).toBeGreaterThan(10);
    for (const path of ['/v1/subscriptions/current', '/v1/entitlements', '/v1/webhooks/stripe']) {
      const operation = Object.values<any>(document.paths[path]).find((o) => o?.responses);
      expect(operation['x-tollgate-choice']).toBe(true);
    }
  });
});

describe('the OpenAPI response checker', () => {
  it('prefers a literal path to a template', () => {
    expect(matchOpenApiPath('/v1/subscriptions/current')).toBe('/v1/subscriptions/current');
    expect(matchOpenApiPath('/v1/subscriptions/sub_1/cancel')).toBe('/v1/subscriptions/{id}/cancel');
    expect(matchOpenApiPath('/v1/customers/cus_1?x=1')).toBe('/v1/customers/{id}');
    expect(matchOpenApiPath('/v1/customers/cus_1/extra')).toBeUndefined();
  });

  it('rejects an extra or missing Customer field', () => {
    expect(() =>
      expectOpenApiResponse(json(200, { ...CUSTOMER, appId: 'app_1' }), 'GET', '/v1/customers/cus_abc'),
    ).toThrow(/must NOT have additional properties/);
    const { updatedAt: _omitted, ...missing } = CUSTOMER;
    expect(() => expectOpenApiResponse(json(200, missing), 'GET', '/v1/customers/cus_abc')).toThrow(
      /must have required property 'updatedAt'/,
    );
  });

  it('rejects a timestamp that is not ISO 8601', () => {
    expect(() =>
      expectOpenApiResponse(json(201, { ...CUSTOMER, createdAt: 'yesterday' }), 'POST', '/v1/customers'),
    ).toThrow(/createdAt must match format "date-time"/);
  });

  it('rejects an error that is not the envelope', () => {
    expect(() =>
      expectOpenApiResponse(json(404, { error: 'not found' }), 'GET', '/v1/customers/cus_x'),
    ).toThrow(/must have required property 'statusCode'/);
  });

  it('rejects an undocumented status, path or method', () => {
    expect(() => expectOpenApiResponse(json(418, {}), 'GET', '/v1/customers')).toThrow(
      /status not documented/,
    );
    expect(() => expectOpenApiResponse(json(200, {}), 'GET', '/v1/nowhere')).toThrow(
      /path is not documented/,
    );
    expect(() => expectOpenApiResponse(json(200, {}), 'PUT', '/v1/customers/cus_1')).toThrow(
      /PUT \/v1\/customers\/\{id\} is not documented/,
    );
  });

  it('rejects a content type the document does not list', () => {
    const html = { status: 200, body: {}, headers: { ...RATE_LIMIT_HEADERS, 'content-type': 'text/html' } };
    expect(() => expectOpenApiResponse(html, 'GET', '/v1/customers/cus_abc')).toThrow(
      /content-type "text\/html"/,
    );
  });

  it('rejects a response without the rate-limit headers', () => {
    const { 'x-ratelimit-remaining': _omitted, ...headers } = json(200, CUSTOMER).headers as Record<
      string,
      string
    >;
    expect(() =>
      expectOpenApiResponse({ status: 200, body: CUSTOMER, headers }, 'GET', '/v1/customers/cus_abc'),
    ).toThrow(/header X-RateLimit-Remaining is missing/);
  });

  it('rejects a malformed rate-limit header', () => {
    expect(() =>
      expectOpenApiResponse(
        json(200, CUSTOMER, { 'x-ratelimit-reset': 'soon' }),
        'GET',
        '/v1/customers/cus_abc',
      ),
    ).toThrow(/header X-RateLimit-Reset=soon/);
  });
});
