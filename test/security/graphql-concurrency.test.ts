import pg from 'pg';
import { Turns } from '../../src/graphql/request-limits.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('Turns (the semaphore behind the GraphQL concurrency caps)', () => {
  it('hands turns to waiters in arrival order', async () => {
    const turns = new Turns(1);
    expect(await turns.take()).toBe(true);
    const order: string[] = [];
    const first = turns.take().then((ok) => order.push(`first ${ok}`));
    const second = turns.take().then((ok) => order.push(`second ${ok}`));
    expect(turns.queued).toBe(2);
    turns.give();
    await first;
    turns.give();
    await second;
    expect(order).toEqual(['first true', 'second true']);
    turns.give();
    expect(turns.running).toBe(0);
  });

  it('refuses at once when the line is full, and a waiter past its deadline', async () => {
    const turns = new Turns(1, 1);
    expect(await turns.take()).toBe(true);
    const waiting = turns.take(10);
    expect(await turns.take()).toBe(false);
    expect(await waiting).toBe(false);
    expect(turns.queued).toBe(0);
    // The waiter that gave up is not served later: the next give frees the turn.
    turns.give();
    expect(turns.running).toBe(0);
  });
});

const UPDATE = `mutation($id: ID!, $name: String) { updateCustomer(id: $id, input: { name: $name }) { name } }`;

describe('concurrent GraphQL requests per credential', () => {
  let server: TestServer;
  /** Holds row locks in its transaction. */
  let db: pg.Client;
  /** Watches the server's statements (activity views are a frozen snapshot inside a transaction). */
  let observer: pg.Client;
  beforeAll(async () => {
    server = await startTestServer({
      env: { GRAPHQL_MAX_CONCURRENT_PER_CREDENTIAL: '2', GRAPHQL_MAX_QUEUED_PER_CREDENTIAL: '1' },
    });
    db = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await db.connect();
    observer = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await observer.connect();
  });
  afterAll(async () => {
    await db.end();
    await observer.end();
    await server.close();
  });

  async function customerOf(apiKey: string): Promise<string> {
    const res = await server.graphql(
      'mutation($email: String!) { createCustomer(input: { email: $email }) { id } }',
      { email: `concurrency-${Date.now()}-${Math.random()}@example.com` },
      apiKey,
    );
    return res.body.data.createCustomer.id;
  }

  /** Sends an update with A's key, keeping the answer's `Retry-After`. */
  async function update(apiKey: string, id: string, name: string) {
    const res = await server.http
      .post('/graphql')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ query: UPDATE, variables: { id, name } });
    return { status: res.status, body: res.body, retryAfter: res.headers['retry-after'] };
  }

  /** Waits until `count` statements naming `customerId` wait for a lock (each holds its request's turn). */
  async function blockedOn(customerId: string, count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await observer.query(
        `select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and datname = current_database() and query like $1`,
        [`%${customerId}%`],
      );
      if (rows[0].n === count) return;
      if (Date.now() > deadline) throw new Error(`expected ${count} blocked statements, saw ${rows[0].n}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('runs 2 at a time per credential, queues 1, answers 429 beyond, and leaves other credentials alone', async () => {
    const a = await server.createApp();
    const b = await server.createApp();
    const customerA = await customerOf(a.apiKey);
    const customerB = await customerOf(b.apiKey);

    // Hold the customer's row, so A's updates wait inside their execution, holding their turns.
    await db.query('begin');
    await db.query('select id from customer where id = $1 for update', [customerA]);
    let released = false;
    try {
      const running = [1, 2].map((i) => update(a.apiKey, customerA, `run ${i}`));
      await blockedOn(customerA, 2);

      // Two more: one waits in line (the line holds 1), the other is refused at once.
      const extra = [3, 4].map((i) => update(a.apiKey, customerA, `extra ${i}`));
      const refused = await Promise.race(extra);
      expect(refused).toEqual({
        status: 429,
        body: {
          statusCode: 429,
          message: 'Too many concurrent GraphQL requests: at most 2 at a time per credential',
          error: 'Too Many Requests',
        },
        retryAfter: '1',
      });

      // Another app's key has turns of its own while A's are all taken.
      expect(await update(b.apiKey, customerB, 'b')).toEqual({
        status: 200,
        body: { data: { updateCustomer: { name: 'b' } } },
        retryAfter: undefined,
      });

      await db.query('commit');
      released = true;
      const results = await Promise.all([...running, ...extra]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 429]);
      expect(results.filter((r) => r.status === 200).every((r) => r.body.errors === undefined)).toBe(true);
    } finally {
      if (!released) await db.query('rollback');
    }

    // Every turn was given back: the credential runs two at a time again.
    const again = await Promise.all([5, 6].map((i) => update(a.apiKey, customerA, `again ${i}`)));
    expect(again.map((r) => r.status)).toEqual([200, 200]);
  });
});
