import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { connect, migrate } from '../../src/db.js';
import { createScratchDatabase, dropDatabase } from '../../src/infra/database-admin.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `pagination.total` of an unfiltered list is the app's count kept by statement triggers
 * (customer_count), not a COUNT(*): these tests compare it with COUNT(*) after every kind of write,
 * through the API and with plain SQL as an operator would write (bulk import, restore, clean-up).
 */

let server: TestServer;
let db: pg.Client;

beforeAll(async () => {
  server = await startTestServer();
  db = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await server.close();
});

async function listedTotal(apiKey: string, email?: string): Promise<number> {
  const res = await server.http
    .get('/v1/customers')
    .query(email === undefined ? { limit: 1 } : { email, limit: 1 })
    .set('authorization', `Bearer ${apiKey}`);
  expect(res.status).toBe(200);
  return res.body.pagination.total;
}

async function counted(appId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'select count(*)::int as n from customer where app_id = $1',
    [appId],
  );
  return rows[0]!.n;
}

function create(apiKey: string, email: string) {
  return server.http.post('/v1/customers').set('authorization', `Bearer ${apiKey}`).send({ email });
}

/** Rows as a bulk import would write them: no API, ids and e-mails made up in SQL. */
async function insertWithSql(appId: string, tag: string, count: number): Promise<void> {
  await db.query(
    `insert into customer (id, app_id, email, email_lower, created_at, updated_at)
     select 'cus_' || $2 || n, $1, $2 || n || '@sql.example.com', $2 || n || '@sql.example.com', now(), now()
       from generate_series(1, $3::int) as n`,
    [appId, tag, count],
  );
}

describe('the unfiltered total', () => {
  it('stays exact under concurrent creates through the API and deletes with SQL', async () => {
    const app = await server.createApp();
    await insertWithSql(app.appId, 'old', 60);
    // 40 creates race 60 single-row deletes and one multi-row delete, each on its own connection.
    const deleters = Array.from(
      { length: 3 },
      () => new pg.Client({ connectionString: process.env.TEST_DATABASE_URL }),
    );
    await Promise.all(deleters.map((c) => c.connect()));
    try {
      const creates = Array.from({ length: 40 }, (_, i) => create(app.apiKey, `racer${i}@example.com`));
      const deletes = Array.from({ length: 40 }, (_, i) =>
        deleters[i % 3]!.query('delete from customer where app_id = $1 and id = $2', [
          app.appId,
          `cus_old${i + 1}`,
        ]),
      );
      deletes.push(
        deleters[0]!.query(`delete from customer where app_id = $1 and id like 'cus_old5_'`, [app.appId]),
      );
      const results = await Promise.all([...creates, ...deletes]);
      expect(results.slice(0, 40).map((r) => ('status' in r ? r.status : 0))).toEqual(Array(40).fill(201));
    } finally {
      await Promise.all(deleters.map((c) => c.end()));
    }
    // 60 + 40 created − 40 deleted one by one − cus_old50…59 minus the ones already gone (none above 40).
    expect(await counted(app.appId)).toBe(60 + 40 - 40 - 10);
    expect(await listedTotal(app.apiKey)).toBe(50);
    // The filtered total is counted, and agrees.
    expect(await listedTotal(app.apiKey, 'racer')).toBe(40);
    expect(await listedTotal(app.apiKey, '@sql.example')).toBe(10);
  });

  it('counts rows written with plain SQL: insert, multi-row insert, delete, move between apps', async () => {
    const a = await server.createApp();
    const b = await server.createApp();
    await db.query(
      `insert into customer (id, app_id, email, email_lower) values ($1, $2, 'one@sql.example.com', 'one@sql.example.com')`,
      [`cus_one_${randomBytes(6).toString('hex')}`, a.appId],
    );
    expect(await listedTotal(a.apiKey)).toBe(1);
    await insertWithSql(a.appId, `bulk${randomBytes(3).toString('hex')}`, 250);
    expect(await listedTotal(a.apiKey)).toBe(251);

    // One statement writing into two apps.
    await db.query(
      `insert into customer (id, app_id, email, email_lower)
       select 'cus_two' || n || $3, case when n % 2 = 0 then $1 else $2 end, 'two' || n || '@x.example', 'two' || n || '@x.example'
         from generate_series(1, 9) as n`,
      [a.appId, b.appId, randomBytes(3).toString('hex')],
    );
    expect(await listedTotal(a.apiKey)).toBe(255);
    expect(await listedTotal(b.apiKey)).toBe(5);

    await db.query(`delete from customer where app_id = $1 and email_lower like 'two%'`, [a.appId]);
    expect(await listedTotal(a.apiKey)).toBe(251);

    // An operator moves 100 customers to the other app; a plain update of other columns changes nothing.
    await db.query(
      `update customer set app_id = $2 where id in (select id from customer where app_id = $1 order by id limit 100)`,
      [a.appId, b.appId],
    );
    await db.query(`update customer set name = 'renamed' where app_id = $1`, [b.appId]);
    expect(await listedTotal(a.apiKey)).toBe(151);
    expect(await listedTotal(b.apiKey)).toBe(105);
    expect(await counted(a.appId)).toBe(151);
    expect(await counted(b.appId)).toBe(105);

    // A write that is rolled back leaves the count as it was.
    await db.query('begin');
    await insertWithSql(a.appId, `gone${randomBytes(3).toString('hex')}`, 30);
    await db.query('rollback');
    expect(await listedTotal(a.apiKey)).toBe(151);
  });

  it('gives each session a counter shard of its own, so open inserts into one app never wait on each other', async () => {
    const app = await server.createApp();
    const sessions = Array.from(
      { length: 10 },
      () => new pg.Client({ connectionString: process.env.TEST_DATABASE_URL }),
    );
    await Promise.all(sessions.map((c) => c.connect()));
    try {
      // The first session's first write is rolled back: it loses its remembered shard, not the count.
      await sessions[0]!.query('begin');
      await sessions[0]!.query(
        `insert into customer (id, app_id, email, email_lower) values ($1, $2, 'undone@x.example', 'undone@x.example')`,
        [`cus_undone_${randomBytes(6).toString('hex')}`, app.appId],
      );
      await sessions[0]!.query('rollback');
      // Ten transactions each insert and stay open until all have inserted: a session waiting on
      // another's counter row would fail here after lock_timeout instead of waiting for a commit.
      await Promise.all(
        sessions.map(async (c, i) => {
          await c.query('begin');
          await c.query(`set local lock_timeout = '2s'`);
          await c.query(`insert into customer (id, app_id, email, email_lower) values ($1, $2, $3, $3)`, [
            `cus_open${i}_${randomBytes(6).toString('hex')}`,
            app.appId,
            `open${i}@x.example`,
          ]);
        }),
      );
      await Promise.all(sessions.map((c) => c.query('commit')));
    } finally {
      await Promise.all(sessions.map((c) => c.end()));
    }
    const { rows } = await db.query<{ shards: number }>(
      'select count(*)::int as shards from customer_count where app_id = $1 and n <> 0',
      [app.appId],
    );
    expect(rows[0]!.shards).toBe(10);
    expect(await listedTotal(app.apiKey)).toBe(10);
    expect(await counted(app.appId)).toBe(10);
  });
});

describe('on a database of its own (TRUNCATE empties every app)', () => {
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
  const name = `tollgate_count_${process.pid}_${randomBytes(4).toString('hex')}`;
  let scratch: pg.Client;

  beforeAll(async () => {
    const url = await createScratchDatabase(serverUrl, name);
    const orm = await connect(url, { pool: { min: 0, max: 1 } });
    try {
      await migrate(orm);
    } finally {
      await orm.close(true);
    }
    scratch = new pg.Client({ connectionString: url });
    await scratch.connect();
  });

  afterAll(async () => {
    await scratch?.end();
    await dropDatabase(serverUrl, name);
  });

  async function counts(): Promise<Record<string, number>> {
    const { rows } = await scratch.query<{ app_id: string; n: number }>(
      'select app_id, sum(n)::int as n from customer_count group by app_id having sum(n) <> 0 order by app_id',
    );
    return Object.fromEntries(rows.map((r) => [r.app_id, r.n]));
  }

  async function seed(app: string, n: number): Promise<void> {
    await scratch.query(
      `insert into customer (id, app_id, email, email_lower)
       select 'cus_' || $1 || '_' || g, $1, g || '@' || $1 || '.example', g || '@' || $1 || '.example'
         from generate_series(1, $2::int) as g`,
      [app, n],
    );
  }

  it('counts rows bulk-loaded with COPY, and none of a COPY that failed', async () => {
    await scratch.query(`insert into app (id, name) values ('app_c1', 'c1'), ('app_c2', 'c2')`);
    const copy = async (lines: string[]) => {
      const stream = scratch.query(copyFrom('copy customer (id, app_id, email, email_lower) from stdin'));
      await pipeline(Readable.from(lines.map((line) => `${line}\n`)), stream);
    };
    const rows = (app: string, from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => {
        const email = `copy${from + i}@${app}.example`;
        return `cus_copy_${app}_${from + i}\t${app}\t${email}\t${email}`;
      });
    // The kept counts of this test's apps, and what COUNT(*) says of them.
    const mine = async () => {
      const kept = await counts();
      const { rows: counted } = await scratch.query<{ app_id: string; n: number }>(
        `select app_id, count(*)::int as n from customer where app_id in ('app_c1', 'app_c2') group by app_id`,
      );
      return {
        kept: { app_c1: kept.app_c1, app_c2: kept.app_c2 },
        counted: Object.fromEntries(counted.map((r) => [r.app_id, r.n])),
      };
    };

    await copy([...rows('app_c1', 0, 250), ...rows('app_c2', 0, 40)]);
    expect(await mine()).toEqual({ kept: { app_c1: 250, app_c2: 40 }, counted: { app_c1: 250, app_c2: 40 } });
    // A load that fails part-way (a duplicate id on its last line) leaves no row and no count behind.
    const duplicate = 'cus_copy_app_c1_0\tapp_c1\tdup@x.example\tdup@x.example';
    await expect(copy([...rows('app_c1', 250, 300), duplicate])).rejects.toThrow(/duplicate key/);
    expect(await mine()).toEqual({ kept: { app_c1: 250, app_c2: 40 }, counted: { app_c1: 250, app_c2: 40 } });
    await scratch.query(`delete from app where id in ('app_c1', 'app_c2')`);
    expect(await mine()).toEqual({ kept: { app_c1: undefined, app_c2: undefined }, counted: {} });
  });

  it('keeps the count exact through TRUNCATE, a reload and an app deleted with its customers', async () => {
    await scratch.query(`insert into app (id, name) values ('app_t1', 't1'), ('app_t2', 't2')`);
    await seed('app_t1', 120);
    await seed('app_t2', 30);
    expect(await counts()).toEqual({ app_t1: 120, app_t2: 30 });

    // TRUNCATE fires no row trigger; CASCADE empties the tables referring to customers as well.
    await scratch.query('truncate customer cascade');
    expect(await counts()).toEqual({});
    // The counter rows stay, emptied: each keeps its share of the app's write version, which only grows.
    const { rows } = await scratch.query<{ n: number; zero: number }>(
      'select count(*)::int as n, count(*) filter (where n = 0 and version > 0)::int as zero from customer_count',
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
    expect(rows[0]!.zero).toBe(rows[0]!.n);

    // A restore after the truncate starts from zero.
    await seed('app_t1', 75);
    expect(await counts()).toEqual({ app_t1: 75 });

    // Deleting an app cascades to its customers and its counter rows alike.
    await seed('app_t2', 5);
    await scratch.query(`delete from app where id = 'app_t1'`);
    expect(await counts()).toEqual({ app_t2: 5 });
    const left = await scratch.query<{ n: number }>(
      `select count(*)::int as n from customer_count where app_id = 'app_t1'`,
    );
    expect(left.rows[0]!.n).toBe(0);
  });
});
