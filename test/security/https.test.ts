import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { HSTS } from '../../src/rest/transport-security.js';
import { productionEnv, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The interface requires HTTPS. Production must say how it arrives (TLS here, or a proxy in front);
 * behind a proxy, a request the proxy received over plain HTTP is refused with 403, except the probes;
 * answers over HTTPS carry HSTS. Development keeps plain HTTP on loopback.
 */

const HTTPS_REQUIRED = {
  statusCode: 403,
  message: 'HTTPS is required: send this request to an https:// URL',
  error: 'Forbidden',
};

describe('production configuration', () => {
  const base = {
    NODE_ENV: 'production',
    DATABASE_URL: 'postgres://db/tollgate',
    ADMIN_TOKEN: 'a-long-enough-admin-token',
    PUBLIC_BASE_URL: 'https://billing.example.com',
    STRIPE_SECRET_KEY: 'sk_live_x',
    STRIPE_WEBHOOK_SECRET: 'whsec_x',
    SMTP_URL: 'smtp://mail.example.com',
    MAIL_FROM: 'Billing <billing@example.com>',
    WEBHOOK_SECRET_KEY: 'dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE=',
  };

  it('refuses to start when nothing says how HTTPS reaches it, naming the variables', () => {
    expect(() => loadConfig(base)).toThrow(
      new ConfigError(
        'Invalid configuration: NODE_ENV=production requires HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE to terminate TLS here, or TRUST_PROXY when a proxy in front terminates it',
      ),
    );
  });

  it('accepts a proxy in front, or a certificate and key, and wants both of those', () => {
    expect(loadConfig({ ...base, TRUST_PROXY: '1' })).toMatchObject({ trustProxy: 1, tls: undefined });
    expect(loadConfig({ ...base, TLS_CERT_FILE: '/tls/cert.pem', TLS_KEY_FILE: '/tls/key.pem' }).tls).toEqual(
      {
        certFile: '/tls/cert.pem',
        keyFile: '/tls/key.pem',
      },
    );
    expect(() => loadConfig({ ...base, TLS_CERT_FILE: '/tls/cert.pem' })).toThrow(
      'TLS_CERT_FILE and TLS_KEY_FILE must be set together',
    );
  });

  it('needs neither in development', () => {
    expect(loadConfig({})).toMatchObject({ production: false, trustProxy: undefined, tls: undefined });
  });
});

describe('production behind a TLS-terminating proxy', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: productionEnv({ TRUST_PROXY: 'loopback' }) });
  });
  afterAll(() => server.close());

  it('refuses a request the proxy received over plain HTTP with a 403 envelope, and no HSTS', async () => {
    const res = await request(server.url).get('/v1/customers').set('x-forwarded-proto', 'http');
    expect(res.status).toBe(403);
    expect(res.body).toEqual(HTTPS_REQUIRED);
    expect(res.headers['strict-transport-security']).toBeUndefined();

    // A proxy that does not say which protocol it received is not believed to have received HTTPS.
    const unsaid = await request(server.url).post('/graphql').send({ query: '{ __typename }' });
    expect(unsaid.status).toBe(403);
    expect(unsaid.body).toEqual(HTTPS_REQUIRED);
  });

  it('serves HTTPS requests with Strict-Transport-Security', async () => {
    const res = await request(server.url)
      .post('/graphql')
      .set('x-forwarded-proto', 'https')
      .send({ query: '{ __typename }' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { __typename: 'Query' } });
    expect(res.headers['strict-transport-security']).toBe(HSTS);
    expect(HSTS).toBe('max-age=31536000; includeSubDomains');
  });

  it('answers the probes over plain HTTP', async () => {
    const health = await request(server.url).get('/healthz').set('x-forwarded-proto', 'http');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await request(server.url).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', database: 'up' });
    expect(ready.headers['strict-transport-security']).toBeUndefined();
  });

  it('believes only the X-Forwarded-Proto value the trusted proxy wrote: the last one', async () => {
    // A client's own `https` ahead of what the proxy appended (`http`) claims nothing.
    const spoofed = await request(server.url).get('/v1/customers').set('x-forwarded-proto', 'https, http');
    expect(spoofed.status).toBe(403);
    expect(spoofed.body).toEqual(HTTPS_REQUIRED);
    expect(spoofed.headers['strict-transport-security']).toBeUndefined();
    // The proxy appended `https` to whatever the client sent: HTTPS.
    const appended = await request(server.url)
      .post('/graphql')
      .set('x-forwarded-proto', 'http, https')
      .send({ query: '{ __typename }' });
    expect(appended.status).toBe(200);
    expect(appended.headers['strict-transport-security']).toBe(HSTS);
  });

  it('believes X-Forwarded-Proto only from the proxies it trusts', async () => {
    const strict = await startTestServer({ env: productionEnv({ TRUST_PROXY: '10.0.0.0/8' }) });
    try {
      // The test's own address (loopback) is not a trusted proxy: its header claims nothing.
      const res = await request(strict.url).get('/v1/customers').set('x-forwarded-proto', 'https');
      expect(res.status).toBe(403);
      expect(res.body).toEqual(HTTPS_REQUIRED);
    } finally {
      await strict.close();
    }
  });
});

describe('development', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('serves plain HTTP on loopback, without HSTS', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await request(server.url).post('/graphql').send({ query: '{ __typename }' });
    expect(res.status).toBe(200);
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });
});

describe('production terminating TLS itself', () => {
  let dir: string;
  let ca: Buffer;
  let server: TestServer;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-tls-'));
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    // A self-signed certificate for 127.0.0.1, made for this run only (the openssl CLI is on every CI image).
    await promisify(execFile)('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    ca = await readFile(cert);
    server = await startTestServer({ env: productionEnv({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key }) });
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A GET over HTTPS that trusts only the test's certificate. */
  function get(
    pathname: string,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(`${server.url}${pathname}`, { ca }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.once('error', reject);
      req.end();
    });
  }

  it('serves HTTPS with HSTS, its probes included', async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const res = await get('/v1/customers');
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toEqual({
      statusCode: 401,
      message: expect.any(String),
      error: 'Unauthorized',
    });
    expect(res.headers['strict-transport-security']).toBe(HSTS);
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ status: 'ready', database: 'up' });
    expect(ready.headers['strict-transport-security']).toBe(HSTS);
  });

  it('does not speak plain HTTP at all', async () => {
    const plain = server.url.replace(/^https:/, 'http:');
    await expect(fetch(`${plain}/healthz`)).rejects.toThrow();
  });

  it('refuses to start when a file cannot be read, naming the variable', async () => {
    await expect(
      startTestServer({
        env: productionEnv({
          TLS_CERT_FILE: path.join(dir, 'missing.pem'),
          TLS_KEY_FILE: path.join(dir, 'key.pem'),
        }),
      }),
    ).rejects.toThrow(
      new ConfigError(`TLS_CERT_FILE: cannot read ${path.join(dir, 'missing.pem')} (ENOENT)`),
    );
  });
});
