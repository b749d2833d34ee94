import type pg from 'pg';
import type { TestServer } from './server.js';

/** A customer-list request's filter and page. */
export interface ListQuery {
  readonly email?: string;
  readonly offset?: number;
  readonly limit?: number;
}

/** A page as the list tests compare it: the total and the ids, in order. */
export interface Listed {
  readonly total: number;
  readonly ids: string[];
}

/** `GET /v1/customers` (limit 20 unless the query says otherwise), which must answer 200. */
export async function listPage(server: TestServer, apiKey: string, query: ListQuery): Promise<Listed> {
  const res = await server.http
    .get('/v1/customers')
    .query({ limit: 20, ...query })
    .set('authorization', `Bearer ${apiKey}`);
  expect(res.status).toBe(200);
  return { total: res.body.pagination.total, ids: res.body.data.map((c: { id: string }) => c.id) };
}

/** The same page as plain SQL answers it: every match counted, `offset` rows passed newest first. */
export async function plainPage(db: pg.Client, appId: string, query: ListQuery): Promise<Listed> {
  const pattern = query.email === undefined ? '%' : `%${query.email.toLowerCase()}%`;
  const { rows } = await db.query<{ id: string }>(
    `select id from customer where app_id = $1 and email_lower like $2 order by created_at desc, id desc`,
    [appId, pattern],
  );
  const offset = query.offset ?? 0;
  return { total: rows.length, ids: rows.slice(offset, offset + (query.limit ?? 20)).map((r) => r.id) };
}

/**
 * `count` customers as a bulk import writes them, `<tag><n>@even.example` or `@odd.example`; `tie` rows
 * share each creation time, so the id breaks ties.
 */
export async function insertCustomersWithSql(
  db: pg.Client,
  appId: string,
  tag: string,
  count: number,
  tie = 1,
): Promise<void> {
  await db.query(
    `insert into customer (id, app_id, email, email_lower, created_at, updated_at)
     select 'cus_' || $2 || lpad(n::text, 6, '0'), $1, e, e,
            timestamptz '2026-01-01' + (n / $4::int) * interval '1 second', now()
       from generate_series(1, $3::int) as n,
            lateral (select $2 || n || case when n % 2 = 0 then '@even.example' else '@odd.example' end as e) as x`,
    [appId, tag, count, tie],
  );
}
