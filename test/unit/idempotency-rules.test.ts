import {
  canonicalJson,
  customerIdsIn,
  isRefusedRestPath,
  isReplayable,
  keyProblem,
  REFUSED_MUTATIONS,
  requestFingerprint,
} from '../../src/modules/idempotency/idempotency-rules.js';

describe('Idempotency-Key rules', () => {
  it('accepts 1 to 255 printable ASCII characters and nothing else', () => {
    expect(keyProblem('a')).toBeNull();
    expect(keyProblem('9b2f6c1e-8a4d-4c3b-9f1e-2d7a5b6c8e90')).toBeNull();
    expect(keyProblem('x'.repeat(255))).toBeNull();
    for (const bad of ['', 'x'.repeat(256), 'two words', 'tab\there', 'é', 'line\n']) {
      expect(keyProblem(bad)).toBe(
        'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces',
      );
    }
  });

  it('gives one fingerprint to bodies that differ only in key order, another to other bodies', () => {
    const a = requestFingerprint('POST', '/v1/customers', { email: 'a@b.co', metadata: { x: 1, y: [1, 2] } });
    const b = requestFingerprint('POST', '/v1/customers', { metadata: { y: [1, 2], x: 1 }, email: 'a@b.co' });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(
      requestFingerprint('POST', '/v1/customers', { email: 'a@b.co', metadata: { x: 2, y: [1, 2] } }),
    ).not.toBe(a);
    expect(
      requestFingerprint('POST', '/v1/customers', { email: 'a@b.co', metadata: { x: 1, y: [2, 1] } }),
    ).not.toBe(a);
    expect(
      requestFingerprint('POST', '/v1/other', { email: 'a@b.co', metadata: { x: 1, y: [1, 2] } }),
    ).not.toBe(a);
    expect(canonicalJson({ b: 1, a: { d: null, c: 'x' } })).toBe('{"a":{"c":"x","d":null},"b":1}');
  });

  it('finds the customer ids a request or answer names, once each', () => {
    const a = 'cus_abcdefghijklmnopqrstuvwxyz234567';
    const b = 'cus_7777777777777777777777777777777a';
    expect(customerIdsIn(`/v1/customers/${a}`, `{"customerId":"${b}","again":"${a}"}`)).toEqual(
      [a, b].sort(),
    );
    expect(
      customerIdsIn(
        'cus_short',
        'CUS_ABCDEFGHIJKLMNOPQRSTUVWXYZ234567',
        'sub_abcdefghijklmnopqrstuvwxyz234567',
      ),
    ).toEqual([]);
  });

  it('keeps 2xx and 4xx answers, never 5xx nor a GraphQL answer reporting a 5xx error', () => {
    expect(isReplayable(201, '{}', false)).toBe(true);
    expect(isReplayable(409, '{}', false)).toBe(true);
    expect(isReplayable(500, '{}', false)).toBe(false);
    expect(isReplayable(503, '{}', false)).toBe(false);
    expect(isReplayable(200, '{"data":{"x":1}}', true)).toBe(true);
    expect(isReplayable(200, '{"errors":[{"extensions":{"statusCode":404}}]}', true)).toBe(true);
    expect(isReplayable(200, '{"errors":[{"extensions":{"statusCode":503}}]}', true)).toBe(false);
    expect(isReplayable(200, '{"errors":[{"message":"no status"}]}', true)).toBe(false);
  });

  it('refuses the header on the public login POSTs and on the answers that carry a secret', () => {
    expect(isRefusedRestPath('/v1/apps/app_x/auth/magic-link')).toBe(true);
    expect(isRefusedRestPath('/v1/apps/app_x/auth/verify')).toBe(true);
    expect(isRefusedRestPath('/v1/apps/app_x/auth/switch-organization')).toBe(true);
    expect(isRefusedRestPath('/v1/apps/app_x/auth/entitlement-token')).toBe(true);
    expect(isRefusedRestPath('/v1/webhook-endpoints')).toBe(true);
    expect(isRefusedRestPath('/v1/webhook-endpoints/we_x/rotate-secret')).toBe(true);
    expect(isRefusedRestPath('/v1/webhook-deliveries/whd_x/retry')).toBe(false);
    expect(isRefusedRestPath('/v1/customers')).toBe(false);
    expect(isRefusedRestPath('/v1/checkout/session')).toBe(false);
    expect([...REFUSED_MUTATIONS].sort()).toEqual([
      'createApiKey',
      'createApp',
      'createWebhookEndpoint',
      'requestMagicLink',
      'rotateWebhookEndpointSecret',
      'switchOrganization',
      'verifyMagicLink',
    ]);
  });
});
