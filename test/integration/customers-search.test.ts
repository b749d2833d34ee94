import pg from 'pg';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ROWS = 50_000;

let server: TestServer;
let db: pg.Client;
let app: { appId: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer();
  app = await server.createApp();
  db = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await db.connect();
  // A large app, written straight into the table: the API would take minutes for this many rows.
  await db.query(
    `insert into customer (id, app_id, email, email_lower, metadata, created_at, updated_at)
     select 'cus_bulk' || n, $1, 'person' || n || '@bulk' || (n % 97) || '.example.com',
            'person' || n || '@bulk' || (n % 97) || '.example.com', '{}',
            timestamptz '2025-01-01' + n * interval '1 second', timestamptz '2025-01-01' + n * interval '1 second'
       from generate_series(1, $2::int) as n`,
    [app.appId, ROWS],
  );
  await db.query('analyze customer');
}, 120_000);

afterAll(async () => {
  await db?.end();
  await server.close();
});

function list(query: Record<string, string | number>) {
  return server.http.get('/v1/customers').query(query).set('authorization', `Bearer ${app.apiKey}`);
}

describe('the e-mail filter on a large app', () => {
  it('finds a fragment among 50 000 customers, newest first, with the total of all matches', async () => {
    // person1234@… , person12345@… and person41234@… contain "1234"; so do others: count them in SQL.
    const expected = await db.query<{ count: string }>(
      `select count(*) from customer where app_id = $1 and email_lower like '%1234%'`,
      [app.appId],
    );
    const res = await list({ email: '1234', limit: 100 });
    expect(res.status).toBe(200);
    expect(res.body.pagination.total).toBe(Number(expected.rows[0]!.count));
    const created = res.body.data.map((c: { createdAt: string }) => Date.parse(c.createdAt));
    expect(created).toEqual([...created].sort((a, b) => b - a));
    expect(res.body.data.every((c: { email: string }) => c.email.includes('1234'))).toBe(true);
  });

  it('answers quickly on the large app', async () => {
    await list({ email: 'person4999' }); // warm the connection and plan cache
    const started = performance.now();
    const res = await list({ email: 'PERSON4999' });
    const elapsed = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.pagination.total).toBe(11); // 4999 and 49990 … 49999
    expect(elapsed).toBeLessThan(500);
  });

  it('counts a selective fragment through the trigram index on the app and email_lower', async () => {
    // The total is what costs: its plan must use the trigram index (the page's plan at this size may
    // walk the newest entries instead; plans at 1 M customers are asserted by bench/customers-list.js).
    const plan = await db.query<{ 'QUERY PLAN': string }>(
      `explain select count(*) from customer where app_id = $1 and email_lower like '%person4999%'`,
      [app.appId],
    );
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('customer_app_id_email_lower_trgm_index');
  });

  it('pages deep offsets exactly, from either end of the app, with the total kept by the database', async () => {
    // Beyond 10 000 the page is found from the nearer end: both directions must give SQL's own page.
    for (const [offset, limit] of [
      [0, 20],
      [12_000, 20],
      [30_000, 7],
      [ROWS - 20, 20],
      [ROWS - 5, 20],
    ] as const) {
      const expected = await db.query<{ id: string }>(
        `select id from customer where app_id = $1 order by created_at desc, id desc limit $2 offset $3`,
        [app.appId, limit, offset],
      );
      const res = await list({ offset, limit });
      expect(res.status).toBe(200);
      expect(res.body.pagination).toEqual({ total: ROWS, limit, offset });
      expect(res.body.data.map((c: { id: string }) => c.id)).toEqual(expected.rows.map((r) => r.id));
    }
    const past = await list({ offset: ROWS, limit: 20 });
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ data: [], pagination: { total: ROWS, limit: 20, offset: ROWS } });
  });
});
