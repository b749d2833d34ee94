import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  insertCustomersWithSql,
  type Listed,
  type ListQuery,
  listPage,
  plainPage,
} from '../helpers/customer-lists.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Remembered totals and positions survive writes: each instance adjusts them by the rows every statement
 * announces (CustomerListCache). These tests interleave writes of every kind, matching the filters and
 * not, through both instances and with plain SQL, with list requests on both instances, and compare
 * every total and page with the plain query.
 */

let a: TestServer;
let b: TestServer;
let db: pg.Client;

beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer(), startTestServer()]);
  db = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await Promise.all([a?.close(), b?.close()]);
});

type Query = ListQuery;

const list = listPage;
const plain = (appId: string, query: Query) => plainPage(db, appId, query);

/** Customers as a bulk import writes them (see insertCustomersWithSql), then fresh statistics. */
async function insertWithSql(appId: string, tag: string, count: number, tie = 1): Promise<void> {
  await insertCustomersWithSql(db, appId, tag, count, tie);
  await db.query('analyze customer');
}

function create(server: TestServer, apiKey: string, email: string) {
  return server.http.post('/v1/customers').set('authorization', `Bearer ${apiKey}`).send({ email });
}

/** The id at `offset` of a filtered list, newest first, by plain SQL. */
async function idAt(appId: string, email: string, offset: number): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `select id from customer where app_id = $1 and email_lower like $2
      order by created_at desc, id desc offset $3 limit 1`,
    [appId, `%${email}%`, offset],
  );
  return rows[0]!.id;
}

describe('lists on two instances while the app is written to', () => {
  it('answer every total and page as the plain query does, after each write of any kind', async () => {
    const app = await a.createApp();
    const tag = `w${randomBytes(3).toString('hex')}x`;
    // 24 000 customers, three per second (ties broken by id), half `even`; `${tag}123` matches 11 of
    // them (a short list, remembered whole); a walk to the middle of the whole list passes more than
    // 10 000 rows, so it leaves anchors that later pages start from (and writes move).
    await insertWithSql(app.appId, tag, 24_000, 3);
    const short = `${tag}123`;
    const queries: Query[] = [
      { email: 'even' },
      { email: 'even', offset: 3_000 },
      { email: 'even', offset: 5_990 },
      { email: 'odd', offset: 4_321, limit: 7 },
      { email: short },
      { email: short, offset: 3, limit: 5 },
      { offset: 12_000 },
      { offset: 10_500 },
      { offset: 13_333, limit: 9 },
      { email: '.example', offset: 11_000 },
      { offset: 23_990 },
      // The first pages of the whole list, answered from the remembered head where its rows are known.
      {},
      { offset: 30, limit: 70 },
    ];
    const sid = () => `cus_wsql_${randomBytes(6).toString('hex')}`;
    const u = () => randomBytes(3).toString('hex');
    const auth = { authorization: `Bearer ${app.apiKey}` };
    const writes: [string, () => Promise<unknown>][] = [
      [
        'API create on a, matching both filters',
        () => create(a, app.apiKey, `${short}new${u()}@even.example`),
      ],
      [
        'API create on b, matching neither',
        () => create(b, app.apiKey, `zz${randomBytes(3).toString('hex')}@none.example`),
      ],
      [
        'API delete on b of an even row in the middle',
        async () => b.http.delete(`/v1/customers/${await idAt(app.appId, 'even', 2_500)}`).set(auth),
      ],
      [
        'SQL insert tying the row at offset 10 600 on created_at',
        () =>
          db.query(
            `insert into customer (id, app_id, email, email_lower, created_at)
             select id || $2, app_id, $2 || email_lower, $2 || email_lower, created_at from customer
              where app_id = $1 order by created_at desc, id desc offset 10600 limit 1`,
            [app.appId, `tie${u()}`],
          ),
      ],
      [
        'SQL update turning an even row odd',
        async () =>
          db.query(`update customer set email_lower = replace(email_lower, 'even', 'odd') where id = $1`, [
            await idAt(app.appId, 'even', 4_000),
          ]),
      ],
      [
        'SQL delete of a short-list row',
        async () => db.query('delete from customer where id = $1', [await idAt(app.appId, short, 4)]),
      ],
      [
        'SQL insert of three rows in one statement',
        () =>
          db.query(
            `insert into customer (id, app_id, email, email_lower, created_at)
             select $2 || n, $1, e, e, timestamptz '2026-01-01' + n * interval '1 hour'
               from generate_series(1, 3) as n, lateral (select $3 || n || '@even.example' as e) as x`,
            [app.appId, sid(), `${short}${u()}`],
          ),
      ],
      [
        'SQL update moving a row to the newest end (created_at)',
        async () =>
          db.query(`update customer set created_at = now() where id = $1`, [
            await idAt(app.appId, 'odd', 5_000),
          ]),
      ],
      [
        'a transaction of two statements: insert, then delete another row',
        async () => {
          const victim = await idAt(app.appId, 'even', 100);
          await db.query('begin');
          await db.query(`insert into customer (id, app_id, email, email_lower) values ($1, $2, $3, $3)`, [
            sid(),
            app.appId,
            `${short}tx${u()}@even.example`,
          ]);
          await db.query('delete from customer where id = $1', [victim]);
          await db.query('commit');
        },
      ],
      [
        'a rolled-back insert',
        async () => {
          await db.query('begin');
          await db.query(
            `insert into customer (id, app_id, email, email_lower) values ($1, $2, 'gone@even.example', 'gone@even.example')`,
            [sid(), app.appId],
          );
          await db.query('rollback');
        },
      ],
      [
        'API PATCH of a name (no list change)',
        async () =>
          a.http
            .patch(`/v1/customers/${await idAt(app.appId, short, 0)}`)
            .set(auth)
            .send({ name: 'Renamed' }),
      ],
      [
        'SQL update changing an e-mail into the short list',
        async () =>
          db.query(`update customer set email_lower = $2 where id = $1`, [
            await idAt(app.appId, 'odd', 10),
            `${short}moved${u()}@odd.example`,
          ]),
      ],
    ];

    const compareAll = async (after: string) => {
      for (const query of queries) {
        const expected = await plain(app.appId, query);
        for (const [name, server] of [
          ['a', a],
          ['b', b],
        ] as const) {
          const answer = await list(server, app.apiKey, query);
          expect({ after, server: name, query, ...answer }).toEqual({
            after,
            server: name,
            query,
            ...expected,
          });
        }
      }
    };
    await compareAll('nothing');
    for (let round = 0; round < 2; round++) {
      for (const [what, write] of writes) {
        await write();
        await compareAll(what);
      }
    }
  }, 180_000);

  it('answer every list exactly while a writer creates and deletes customers beside them', async () => {
    const app = await a.createApp();
    const tag = `c${randomBytes(3).toString('hex')}x`;
    await insertWithSql(app.appId, tag, 10_500);
    const short = `${tag}77`; // 77, 770–779, 7700–7799: 111 rows, then fewer as the writer deletes some
    const queries: Query[] = [
      { email: 'even', offset: 40 },
      { email: 'odd', offset: 5_000 },
      { email: `${tag}123` },
      { email: short, offset: 90 },
      { offset: 10_200 },
      {},
      { offset: 30, limit: 70 },
    ];

    // The app's rows: id → [created_at in µs, email_lower]. created_at never ties in this test, so the
    // model's order is the database's whatever its collation.
    interface Row {
      readonly at: bigint;
      readonly email: string;
    }
    const rows = new Map<string, Row>();
    const load = async () => {
      const { rows: found } = await db.query<{ id: string; at: string; email_lower: string }>(
        `select id, (extract(epoch from created_at) * 1000000)::bigint::text as at, email_lower
           from customer where app_id = $1`,
        [app.appId],
      );
      return new Map(found.map((r) => [r.id, { at: BigInt(r.at), email: r.email_lower }]));
    };
    for (const [id, row] of await load()) rows.set(id, row);
    type Op = { readonly insert: string; readonly row: Row } | { readonly delete: string };
    const ops: Op[] = [];
    const modelAt = (k: number, query: Query): Listed => {
      const state = new Map(rows);
      for (const op of ops.slice(0, k)) {
        if ('insert' in op) state.set(op.insert, op.row);
        else state.delete(op.delete);
      }
      const fragment = query.email?.toLowerCase() ?? '';
      const matching = [...state.entries()]
        .filter(([, row]) => row.email.includes(fragment))
        .sort(([, x], [, y]) => (x.at === y.at ? 0 : x.at > y.at ? -1 : 1))
        .map(([id]) => id);
      const offset = query.offset ?? 0;
      return { total: matching.length, ids: matching.slice(offset, offset + (query.limit ?? 20)) };
    };

    let done = false;
    const writer = (async () => {
      try {
        for (let i = 0; i < 60; i++) {
          if (i % 3 === 2) {
            // A delete with plain SQL of a row the readers' lists hold: the short list, or deep down.
            const victim = await idAt(app.appId, i % 2 ? short : 'odd', i % 2 ? 3 : 5_000 - i);
            const before = await load();
            await db.query('delete from customer where id = $1', [victim]);
            ops.push({ delete: victim });
            expect(before.has(victim)).toBe(true);
          } else {
            const email = i % 3 === 0 ? `${short}n${i}@even.example` : `n${i}@none.example`;
            const res = await create(i % 2 ? b : a, app.apiKey, email);
            expect(res.status).toBe(201);
            const { rows: found } = await db.query<{ at: string }>(
              `select (extract(epoch from created_at) * 1000000)::bigint::text as at from customer where id = $1`,
              [res.body.id],
            );
            ops.push({ insert: res.body.id, row: { at: BigInt(found[0]!.at), email } });
          }
        }
      } finally {
        done = true;
      }
    })();

    // Each answer with the number of writes done when it was asked and when it came back. A write is
    // recorded after its commit, so the answer's snapshot may also hold the one write under way.
    const answers: { name: string; query: Query; answer: Listed; from: number; to: number }[] = [];
    const reader = async (server: TestServer, name: string) => {
      for (let i = 0; !done; i++) {
        const query = queries[i % queries.length]!;
        const from = ops.length;
        const answer = await list(server, app.apiKey, query);
        answers.push({ name, query, answer, from, to: ops.length + 1 });
      }
    };
    await Promise.all([writer, reader(a, 'a'), reader(b, 'b'), reader(a, 'a')]);
    expect(answers.filter((x) => x.name === 'a').length).toBeGreaterThan(10);
    expect(answers.filter((x) => x.name === 'b').length).toBeGreaterThan(5);
    for (const { name, query, answer, from, to } of answers) {
      const states = Array.from({ length: Math.min(to, ops.length) - from + 1 }, (_, j) =>
        modelAt(from + j, query),
      );
      if (!states.some((s) => s.total === answer.total && s.ids.join() === answer.ids.join())) {
        expect({ server: name, query, answer }).toEqual({ server: name, query, answer: states });
      }
    }

    // The model is the database: at the end, every query agrees with plain SQL, on both instances.
    for (const query of queries) {
      const expected = await plain(app.appId, query);
      expect(modelAt(ops.length, query)).toEqual(expected);
      expect(await list(a, app.apiKey, query)).toEqual(expected);
      expect(await list(b, app.apiKey, query)).toEqual(expected);
    }
  }, 120_000);
});
