import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { envelopeOf, rawRequest } from './helpers.js';

/**
 * The public login endpoints spend the caller's per-IP budget whatever credential is sent. Every
 * answer names the budget it was counted under in `X-RateLimit-Limit`, so distinct limits per rule show
 * which one a spelling of the path spent.
 */
const IP_LIMIT = 5000;
const API_KEY_LIMIT = 7000;

let server: TestServer;
let app: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer({
    env: { RATE_LIMIT_PUBLIC_IP: String(IP_LIMIT), RATE_LIMIT_API_KEY: String(API_KEY_LIMIT) },
  });
  app = await server.createApp();
});
afterAll(async () => {
  await server.close();
});

/** The public endpoints, with an empty body or query: refused by validation (400), so nothing is sent. */
const PUBLIC = [
  { method: 'POST', tail: 'magic-link' },
  { method: 'GET', tail: 'verify' },
  { method: 'POST', tail: 'verify' },
] as const;

/** One character spelled otherwise: other case, or percent-encoded (either case of hex digits). */
const respell = (char: string, how: number): string => {
  const hex = char.charCodeAt(0).toString(16).padStart(2, '0');
  switch (how) {
    case 0:
      return char.toUpperCase();
    case 1:
      return char.toLowerCase();
    case 2:
      return `%${hex.toUpperCase()}`;
    default:
      return `%${hex}`;
  }
};

/** A path with some characters respelled and some separators doubled, a trailing slash or a dot segment. */
const spelling = (path: string) =>
  fc
    .record({
      // The leading slash stays: without it there is no request target at all.
      chars: fc.array(fc.tuple(fc.integer({ min: 1, max: path.length - 1 }), fc.nat(3)), { maxLength: 4 }),
      slashes: fc.array(fc.nat(path.length - 1), { maxLength: 2 }),
      ending: fc.constantFrom('', '/', '//', '/.', '?x=1', '/?x=1', '#'),
    })
    .map(({ chars, slashes, ending }) => {
      const out = [...path];
      for (const [at, how] of chars) out[at] = respell(path[at]!, how);
      for (const at of slashes) if (path[at] === '/') out[at] = '//';
      return out.join('') + (ending === '#' ? '' : ending);
    });

describe('no spelling of a public login path escapes its per-IP budget', () => {
  it('the canonical paths are counted per IP even with an API key', async () => {
    for (const { method, tail } of PUBLIC) {
      const res = await rawRequest(server, {
        method,
        path: `/v1/apps/${app.appId}/auth/${tail}`,
        headers: { authorization: `Bearer ${app.apiKey}`, 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(res.status).toBe(400);
      expect(res.headers['x-ratelimit-limit']).toBe(String(IP_LIMIT));
    }
  });

  it.each([
    ['/V1/APPS/{app}/AUTH/MAGIC-LINK'],
    ['/v1/apps/{app}/auth/Magic-Link'],
    ['/v1/apps/{app}/auth/magic-link/'],
    ['/v1//apps/{app}/auth/magic-link'],
    ['/v1/apps/{app}/auth/magic%2Dlink'],
    ['/v1/apps/{app}/auth/%6Dagic-link'],
  ])('%s reaches no handler: 404, nothing sent', async (template) => {
    const res = await rawRequest(server, {
      method: 'POST',
      path: template.replace('{app}', app.appId),
      headers: { authorization: `Bearer ${app.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'x@example.com', redirectUrl: 'https://example.com/' }),
    });
    expect(res.status).toBe(404);
    expect(res.json()).toEqual(envelopeOf(404, expect.stringMatching(/^Cannot POST /) as any));
  });

  it('any spelling either reaches no handler (404) or spends the per-IP budget (property)', async () => {
    let routed = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc
          .constantFrom(...PUBLIC)
          .chain((endpoint) =>
            spelling(`/v1/apps/${app.appId}/auth/${endpoint.tail}`).map((path) => ({ ...endpoint, path })),
          ),
        async ({ method, path }) => {
          const res = await rawRequest(server, {
            method,
            path,
            headers: { authorization: `Bearer ${app.apiKey}`, 'content-type': 'application/json' },
            body: method === 'POST' ? '{}' : undefined,
          });
          if (res.status === 404) {
            refused++;
            expect(res.json().statusCode).toBe(404);
          } else {
            routed++;
            // Reached the endpoint (its validation answered), and was counted per IP.
            expect([400, 401]).toContain(res.status);
            expect(res.headers['x-ratelimit-limit']).toBe(String(IP_LIMIT));
          }
        },
      ),
      { numRuns: 150 },
    );
    // Both outcomes occurred, so the property was not trivially true.
    expect(routed).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});

describe('an exhausted per-IP budget', () => {
  let small: TestServer;
  let smallApp: { appId: string; apiKey: string };

  beforeAll(async () => {
    small = await startTestServer({ env: { RATE_LIMIT_PUBLIC_IP: '3' } });
    smallApp = await small.createApp();
  });
  afterAll(async () => {
    await small.close();
  });

  it('refuses the endpoint under every spelling that reaches it', async () => {
    const send = (path: string, key?: string) =>
      rawRequest(small, {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: '{}',
      });
    const canonical = `/v1/apps/${smallApp.appId}/auth/magic-link`;
    for (let i = 0; i < 3; i++) expect((await send(canonical)).status).toBe(400);
    expect((await send(canonical)).status).toBe(429);
    expect((await send(canonical, smallApp.apiKey)).status).toBe(429);
    // Another app id is still the same endpoint and the same caller.
    expect(
      (await send(`/v1/apps/${smallApp.appId.toUpperCase()}/auth/magic-link`, smallApp.apiKey)).status,
    ).toBe(429);
    for (const variant of [
      canonical.toUpperCase(),
      `${canonical}/`,
      canonical.replace('magic-link', 'magic%2dlink'),
    ]) {
      const res = await send(variant, smallApp.apiKey);
      // The router's 404 (no handler ran), not an endpoint's "not found".
      expect(res.json()).toEqual(envelopeOf(404, `Cannot POST ${variant}`));
    }
  });
});
