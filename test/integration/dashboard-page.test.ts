import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'graphql';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The dashboard's page and files as HTTP answers: same origin, strict headers, nothing inline. */

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function expectStrictHeaders(headers: Record<string, string>) {
  expect(headers['content-security-policy']).toBe(CSP);
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['cross-origin-opener-policy']).toBe('same-origin');
  expect(headers['set-cookie']).toBeUndefined();
}

/** The asset paths the page names, in order. */
function assetsOf(page: string): string[] {
  return [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
}

describe('the dashboard page', () => {
  it('is served without a credential, with strict headers and no inline script or style', async () => {
    const res = await server.http.get('/dashboard');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expectStrictHeaders(res.headers);
    // Every script is a file of this origin; no inline script, handler or style to allow.
    expect(res.text).not.toMatch(/<script(?![^>]*\ssrc=")/);
    expect(res.text).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    const assets = assetsOf(res.text);
    expect(assets.length).toBeGreaterThanOrEqual(10);
    for (const asset of assets)
      expect(asset).toMatch(/^\/dashboard\/assets\/[0-9a-f]{16}\/[a-z/.-]+\.(js|css|svg)$/);
    expect((await server.http.get('/dashboard/')).status).toBe(200);
  });

  it('serves each module gzipped, immutable, importing only files of its own directory', async () => {
    const page = await server.http.get('/dashboard');
    for (const asset of assetsOf(page.text)) {
      const res = await server.http
        .get(asset)
        .set('accept-encoding', 'gzip')
        .buffer(true)
        .parse((response, done) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe('gzip');
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expectStrictHeaders(res.headers);
      // supertest has already decoded the gzip body (a malformed one would fail the request).
      const text = (res.body as Buffer).toString('utf8');
      if (asset.endsWith('.svg')) {
        // The favicon: an image, nothing it could run or load.
        expect(res.headers['content-type']).toBe('image/svg+xml');
        expect(text).not.toMatch(/<script|\son[a-z]+=|href=/i);
        continue;
      }
      if (asset.endsWith('.css')) {
        expect(res.headers['content-type']).toBe('text/css; charset=utf-8');
        expect(text).not.toMatch(/url\(|@import/);
        continue;
      }
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      const specifiers = [...text.matchAll(/\b(?:import|export)\b[^'"`;]*?\bfrom\s*["']([^"']+)["']/g)].map(
        (m) => m[1]!,
      );
      for (const specifier of specifiers) expect(specifier).toMatch(/^\.\.?\//);
      // The only addresses the page fetches are this origin's GraphQL endpoint and its operator sign-in.
      const fetches = [...text.matchAll(/\bfetch\(\s*([^,)]*)/g)].map((m) => m[1]);
      for (const target of fetches)
        expect(["'/graphql'", "'/dashboard/session'", "'/dashboard/sign-in'"]).toContain(target);
      expect(text).not.toMatch(/\beval\(|new Function\(|document\.cookie|localStorage/);
    }
  });

  it('ships exactly the operations of src/dashboard/*.graphql', async () => {
    const page = await server.http.get('/dashboard');
    const operationsPath = assetsOf(page.text).find((a) => a.endsWith('/operations.js'))!;
    const shipped = (await server.http.get(operationsPath).set('accept-encoding', 'identity')).text;
    const files = readdirSync('src/dashboard')
      .filter((f) => f.endsWith('.graphql'))
      .sort();
    const names = files.flatMap((file) =>
      parse(readFileSync(`src/dashboard/${file}`, 'utf8')).definitions.map(
        (d) => (d as { name?: { value: string } }).name?.value,
      ),
    );
    expect([...shipped.matchAll(/^export const (\w+) = /gm)].map((m) => m[1])).toEqual(names);
  });

  it('answers 404 for files it does not have and for another build version', async () => {
    const page = await server.http.get('/dashboard');
    const app = assetsOf(page.text).find((a) => a.endsWith('/app.js'))!;
    const version = app.split('/')[3]!;
    for (const path of [
      app.replace(version, '0000000000000000'),
      `/dashboard/assets/${version}/missing.js`,
      `/dashboard/assets/${version}/..%2F..%2Fpackage.json`,
      `/dashboard/assets/${version}/dashboard.rest.ts`,
    ]) {
      const res = await server.http.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, message: expect.any(String), error: 'Not Found' });
    }
  });
});
