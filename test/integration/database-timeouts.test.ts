import type { DatabaseTimeouts } from '../../src/config.js';
import { asDomainError, ServiceUnavailableError } from '../../src/core/errors.js';
import { APPLICATION_NAME, connect, databaseReady, type Orm, timeoutOptions } from '../../src/db.js';

const url = process.env.TEST_DATABASE_URL!;

const BOUNDS: DatabaseTimeouts = {
  acquireTimeoutMs: 1_700,
  connectTimeoutMs: 1_300,
  queryTimeoutMs: 2_900,
  statementTimeoutMs: 1_900,
  idleInTransactionTimeoutMs: 7_000,
  changeFeedTimeoutMs: 900,
  readinessTimeoutMs: 800,
};

async function open(bounds: Partial<DatabaseTimeouts>, max = 2): Promise<Orm> {
  return connect(url, { ...timeoutOptions({ ...BOUNDS, ...bounds }), pool: { min: 0, max } });
}

async function backendPid(orm: Orm): Promise<number> {
  const [row] = await orm.em.getConnection().execute<{ pid: number }[]>('select pg_backend_pid() as pid');
  return row!.pid;
}

/** The state of one backend as PostgreSQL reports it, seen from a connection of our own. */
async function backendState(observer: Orm, pid: number): Promise<string | undefined> {
  const rows = await observer.em
    .getConnection()
    .execute<{ state: string }[]>('select state from pg_stat_activity where pid = ?', [pid]);
  return rows[0]?.state;
}

async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${String(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('database timeouts on the pool MikroORM builds', () => {
  let observer: Orm;
  beforeAll(async () => {
    observer = await connect(url, { pool: { min: 0, max: 1 } });
  });
  afterAll(async () => {
    await observer.close(true);
  });

  it('hands the bounds to pg-pool and the server-side ones to every session', async () => {
    const orm = await open({});
    try {
      const pool = await orm.driver.getConnection().getNativeClient();
      expect(pool.options).toMatchObject({
        connectionTimeoutMillis: 1_700,
        query_timeout: 2_900,
        statement_timeout: 1_900,
        idle_in_transaction_session_timeout: 7_000,
        application_name: APPLICATION_NAME,
      });
      const settings = await orm.em.getConnection().execute<{ name: string; setting: string }[]>(
        `select name, setting from pg_settings
          where name in ('statement_timeout', 'idle_in_transaction_session_timeout', 'application_name')
          order by name`,
      );
      expect(settings).toEqual([
        { name: 'application_name', setting: APPLICATION_NAME },
        { name: 'idle_in_transaction_session_timeout', setting: '7000' },
        { name: 'statement_timeout', setting: '1900' },
      ]);
      // The connect bound is the client's own, inside the pool's acquire bound.
      const client = await pool.connect();
      try {
        expect((client as unknown as { _connectionTimeoutMillis: number })._connectionTimeoutMillis).toBe(
          1_300,
        );
      } finally {
        client.release();
      }
    } finally {
      await orm.close(true);
    }
  });

  it('lets the server cancel a slow statement, classifies it as unavailable and keeps the connection', async () => {
    const orm = await open({ statementTimeoutMs: 200 }, 1);
    try {
      const before = await backendPid(orm);
      const error = await orm.em
        .getConnection()
        .execute('select pg_sleep(5)')
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((error as { code?: string }).code).toBe('57014');
      const domain = asDomainError(error);
      expect(domain).toBeInstanceOf(ServiceUnavailableError);
      expect((domain as ServiceUnavailableError).reason).toMatch(/statement timeout/);
      // A cleanly cancelled statement leaves a healthy connection: it is lent again.
      expect(await backendPid(orm)).toBe(before);
    } finally {
      await orm.close(true);
    }
  });

  it('discards a connection whose query timed out on the client, so nobody waits behind its late answer', async () => {
    const orm = await open({ queryTimeoutMs: 300 }, 1);
    try {
      let stuck: number | undefined;
      const error = await orm.em
        .transactional(async (em) => {
          const [row] = await em.execute<{ pid: number }[]>('select pg_backend_pid() as pid');
          stuck = row!.pid;
          // Only the client-side bound can end this, as it must on a server that does not answer.
          await em.execute('set local statement_timeout = 0');
          await em.execute('select pg_sleep(3)');
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((error as Error).message).toBe('Query read timeout');
      expect(asDomainError(error)).toBeInstanceOf(ServiceUnavailableError);

      // The only pool slot is free again, on a new connection, while the old backend still sleeps: the
      // timed-out connection was neither reused nor held for its rollback.
      const next = await backendPid(orm);
      expect(next).not.toBe(stuck);
      expect(await backendState(observer, stuck!)).toBe('active');
      const [row] = await orm.em.getConnection().execute<{ answer: string }[]>(`select 'mine' as answer`);
      expect(row).toEqual({ answer: 'mine' });

      // When its sleep ends, the old backend finds its client gone and exits.
      await until(
        () => backendState(observer, stuck!),
        (state) => state === undefined,
        'the abandoned backend to exit',
      );
    } finally {
      await orm.close(true);
    }
  });

  it('gives the pool slot of a transaction whose connection died back to the pool', async () => {
    const orm = await open({}, 1);
    try {
      const error = await orm.em
        .transactional(async (em) => {
          const [row] = await em.execute<{ pid: number }[]>('select pg_backend_pid() as pid');
          await observer.em.getConnection().execute('select pg_terminate_backend(?)', [row!.pid]);
          await em.execute('select 1');
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(asDomainError(error)).toBeInstanceOf(ServiceUnavailableError);
      // kysely never releases a transaction whose rollback failed; with one slot, a leak would hang here.
      const [row] = await orm.em.getConnection().execute<{ answer: string }[]>(`select 'mine' as answer`);
      expect(row).toEqual({ answer: 'mine' });
    } finally {
      await orm.close(true);
    }
  });

  it('reports readiness within its own bound, and not ready once the connection is gone', async () => {
    const orm = await open({});
    await backendPid(orm); // MikroORM connects on first use
    expect(await databaseReady(orm, 2_000)).toBe(true);
    await orm.close(true);
    expect(await databaseReady(orm, 2_000)).toBe(false);
  });
});
