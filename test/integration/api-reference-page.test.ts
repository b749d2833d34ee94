import request from 'supertest';
import { productionEnv, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `GET /docs` as HTTP answers: served in development, off in production unless DOCS=true, strict headers,
 * every script a file of this origin, and Redoc's build carrying no reference to the one other host it
 * would load from (its logo). The browser test (test/e2e/api-reference.test.ts) renders it.
 */

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function scriptsOf(page: string): string[] {
  return [...page.matchAll(/<script src="([^"]+)"><\/script>/g)].map((m) => m[1]!);
}

function binary(res: request.Response, done: (error: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}

describe('the API reference page', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is served without a credential, with a CSP that allows no other host, and no inline script', async () => {
    const res = await server.http.get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    expect(res.text).not.toMatch(/<script(?![^>]*\ssrc=")/);
    expect(res.text).not.toMatch(/https?:\/\//);
    const scripts = scriptsOf(res.text);
    expect(scripts).toHaveLength(2);
    for (const script of scripts) expect(script).toMatch(/^\/docs\/assets\/[0-9a-f]{16}\/(redoc|start)\.js$/);
    expect(res.text).toContain('href="/openapi.yaml"');
  });

  it('serves Redoc gzipped and immutable, without the logo it would fetch from another host', async () => {
    const [redoc, start] = scriptsOf((await server.http.get('/docs')).text);
    const res = await server.http.get(redoc!).set('accept-encoding', 'gzip').buffer(true).parse(binary);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    // supertest has already decoded the gzip body (a malformed one would fail the request).
    const source = (res.body as Buffer).toString('utf8');
    expect(source).toContain('ReDoc');
    expect(source).not.toContain('cdn.redoc.ly');
    const startScript = await server.http.get(start!).set('accept-encoding', 'identity');
    expect(startScript.text).toContain('Redoc.init("/openapi.yaml"');
    // Another build's version, or a file that is not there, is not served.
    expect((await server.http.get(redoc!.replace(/[0-9a-f]{16}/, '0'.repeat(16)))).status).toBe(404);
    expect((await server.http.get(redoc!.replace('redoc.js', 'other.js'))).status).toBe(404);
  });
});

describe('the API reference in production', () => {
  it('is off by default and not linked from the index', async () => {
    const server = await startTestServer({ env: productionEnv({ TRUST_PROXY: 'loopback' }) });
    try {
      const https = (path: string) => request(server.url).get(path).set('x-forwarded-proto', 'https');
      expect((await https('/docs')).status).toBe(404);
      expect((await https('/')).body.links.apiReference).toBeUndefined();
    } finally {
      await server.close();
    }
  });

  it('is served and linked with DOCS=true', async () => {
    const server = await startTestServer({ env: productionEnv({ TRUST_PROXY: 'loopback', DOCS: 'true' }) });
    try {
      const https = (path: string) => request(server.url).get(path).set('x-forwarded-proto', 'https');
      const page = await https('/docs');
      expect(page.status).toBe(200);
      expect(page.text).toContain('Tollgate API reference');
      expect((await https('/')).body.links.apiReference).toBe('/docs');
    } finally {
      await server.close();
    }
  });
});
