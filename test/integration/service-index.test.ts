import { readFileSync } from 'node:fs';
import request from 'supertest';
import YAML from 'yaml';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PACKAGE = JSON.parse(readFileSync('package.json', 'utf8')) as { name: string; version: string };

const LINKS = {
  docs: '/openapi.yaml',
  openapi: '/openapi.yaml',
  rest: '/v1',
  graphql: '/graphql',
  health: '/healthz',
  readiness: '/readyz',
};

describe('the service index and the OpenAPI document', () => {
  let server: TestServer;
  let quiet: TestServer;
  beforeAll(async () => {
    [server, quiet] = await Promise.all([
      startTestServer(),
      startTestServer({ env: { GRAPHIQL: 'false', DOCS: 'false' } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), quiet?.close()]);
  });

  it('GET / names the service and its version and links to its documents, GraphiQL and the API reference', async () => {
    const res = await server.http.get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      name: 'tollgate',
      version: PACKAGE.version,
      links: { ...LINKS, graphiql: '/graphql', apiReference: '/docs' },
    });
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('leaves GraphiQL and the API reference out when they are not served', async () => {
    const res = await quiet.http.get('/');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'tollgate', version: PACKAGE.version, links: LINKS });
    expect((await quiet.http.get('/v1')).body.links).toEqual(LINKS);
    expect((await quiet.http.get('/docs')).status).toBe(404);
  });

  it('GET /v1 answers the same index, counted like every /v1 request', async () => {
    const res = await server.http.get('/v1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: 'tollgate',
      version: PACKAGE.version,
      links: { ...LINKS, graphiql: '/graphql', apiReference: '/docs' },
    });
    expect(res.headers['x-ratelimit-limit']).toBe('100000');
    const { apiKey } = await server.createApp();
    const withKey = await server.http.get('/v1').set('authorization', `Bearer ${apiKey}`);
    expect(withKey.status).toBe(200);
    expect(withKey.headers['x-ratelimit-limit']).toBe('1000');
  });

  it('refuses an invalid credential at /v1 as every /v1 path does', async () => {
    const res = await server.http.get('/v1').set('authorization', 'Bearer tg_sk_not_a_real_key');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ statusCode: 401, message: expect.any(String), error: 'Unauthorized' });
  });

  it('changes no other /v1 path: other methods, unknown paths and real endpoints answer as before', async () => {
    // An undocumented method: plain supertest, since the documented client would refuse it outright.
    const post = await request(server.url).post('/v1').send({});
    expect(post.status).toBe(404);
    expect(post.body).toEqual({ statusCode: 404, message: 'Cannot POST /v1', error: 'Not Found' });
    const unknown = await server.http.get('/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      statusCode: 404,
      message: 'Cannot GET /v1/nothing-here',
      error: 'Not Found',
    });
    const customers = await server.http.get('/v1/customers');
    expect(customers.status).toBe(401);
    const lookalike = await server.http.get('/v1x');
    expect(lookalike.status).toBe(404);
    // Routing is strict: one spelling per endpoint, so `/v1/` stays the 404 it was.
    const slash = await request(server.url).get('/v1/');
    expect(slash.status).toBe(404);
    expect(slash.body).toEqual({ statusCode: 404, message: 'Cannot GET /v1/', error: 'Not Found' });
    // Text PostgreSQL cannot store is refused at /v1 as on every /v1 path.
    const nul = await server.http.get('/v1?x=%00');
    expect(nul.status).toBe(400);
  });

  it('GET /openapi.yaml serves the document the /v1 answers are checked against', async () => {
    const res = await server.http
      .get('/openapi.yaml')
      .buffer(true)
      .parse((r, done) => {
        let text = '';
        r.on('data', (chunk: Buffer) => {
          text += chunk;
        });
        r.on('end', () => done(null, text));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/yaml; charset=utf-8');
    expect(res.body).toBe(readFileSync('schema/openapi.yaml', 'utf8'));
    const document = YAML.parse(res.body);
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/', '/v1', '/v1/customers']));
  });
});
