import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe('error envelope', () => {
  it('answers an unknown route with 404 in the envelope', async () => {
    const res = await server.http.get('/v1/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      statusCode: 404,
      message: 'Cannot GET /v1/no-such-thing',
      error: 'Not Found',
    });
  });

  it('answers malformed JSON with 400 in the envelope', async () => {
    const res = await server.http
      .post('/v1/customers')
      .set('content-type', 'application/json')
      .send('{"email":');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      statusCode: 400,
      message: 'Malformed JSON in request body',
      error: 'Bad Request',
    });
  });

  it('answers a body over 100 KiB with 413 in the envelope', async () => {
    const big = JSON.stringify({ padding: 'x'.repeat(101 * 1024) });
    const res = await server.http.post('/graphql').set('content-type', 'application/json').send(big);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      statusCode: 413,
      message: 'Request body exceeds the 100 KiB limit',
      error: 'Payload Too Large',
    });
  });

  it('answers an unknown API key with 401 in the envelope', async () => {
    const res = await server.http.get('/v1/customers').set('authorization', 'Bearer tg_sk_unknown');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      statusCode: 401,
      message: 'Invalid or revoked API key',
      error: 'Unauthorized',
    });
  });

  it('answers a malformed Authorization header with 401', async () => {
    const res = await server.http.get('/v1/customers').set('authorization', 'Basic abc');
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Unauthorized');
  });

  it('carries a request id on every response', async () => {
    const res = await server.http.get('/healthz').set('x-request-id', 'req-123');
    expect(res.headers['x-request-id']).toBe('req-123');
    const generated = await server.http.get('/healthz');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('health', () => {
  it('reports the process up and the database reachable', async () => {
    expect((await server.http.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await server.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', database: 'up' });
  });
});
