import { startTestServer } from '../helpers/server.js';

describe('readiness', () => {
  it('answers /readyz with 503 once the database is unreachable, while /healthz stays up', async () => {
    const server = await startTestServer();
    try {
      expect((await server.http.get('/readyz')).status).toBe(200);
      await server.deps.orm.close(true);
      const res = await server.http.get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'unavailable', database: 'down' });
      expect((await server.http.get('/healthz')).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
