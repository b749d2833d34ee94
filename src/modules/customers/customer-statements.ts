import type { EntityDictionary } from '@mikro-orm/core';
import { PreparedStatement } from '../../infra/prepared-statement.js';
import { deliveryIdSql, endpointsTakingSql } from '../webhooks/outbound-events.js';
import type { Customer } from './customer.entity.js';

/**
 * The customers API's hot paths, each one prepared statement that also confirms the caller's API key
 * (see `requireApiKeyConfirmedInStatement`): `key_ok` is false when the key named by the first two
 * parameters has been revoked or deleted since this instance cached it (null: the operator, no key).
 */
const KEY_OK = `select ?::text is null or exists (select 1 from api_key where id = ? and revoked_at is null) as ok`;

export type CustomerRow = EntityDictionary<Customer>;

/** `key_ok`, and the app's customer with the id when there is one (its columns null otherwise). */
export const READ_CUSTOMER = new PreparedStatement<CustomerRow & { key_ok: boolean }>(
  'tollgate_customer_by_id',
  `select k.ok as key_ok, c.*
     from (${KEY_OK}) as k
     left join customer as c on k.ok and c.id = ? and c.app_id = ?`,
);

/**
 * The app's write versions, one per counter shard, printed `shard:version,…` in shard order, aggregated
 * over its customer_count rows: a shard's version never decreases and moves with every statement that
 * can change a list, so two snapshots reading the same text see the same customers (see
 * CustomerListCache, which keys what it remembers by this text).
 */
export const SHARD_VERSIONS = `coalesce(string_agg(shard || ':' || version, ',' order by shard), '')`;

/** created_at in microseconds since the epoch, exact (numeric), as the notices carry it. */
export const micros = (column: string) => `(extract(epoch from ${column}) * 1000000)::bigint::text`;

/** The app's customer count: the sum of its shard rows in customer_count (see customer-count.entity.ts). */
export const COUNT_SQL = '(select coalesce(sum(n), 0) from customer_count where app_id = ?)';

/**
 * The app's total and a page of its newest customers (`limit`, `offset`), newest first; one row with a
 * null customer when the page is empty.
 */
export const NEWEST_CUSTOMERS = new PreparedStatement<CustomerRow & { total: string }>(
  'tollgate_newest_customers',
  `select t.total, c.*
     from (select ${COUNT_SQL} as total) as t
     left join (select id, created_at from customer where app_id = ?
                 order by created_at desc, id desc limit ? offset ?) as p on true
     left join customer as c on c.id = p.id
    order by p.created_at desc, p.id desc`,
);

/**
 * NEWEST_CUSTOMERS with what an instance remembers of the list's first pages: the app's shard versions
 * (`shard:version,…` by shard, as the list cache keys what it remembers), read in the same snapshot as
 * the total and the page, and the ids of the newest `HEAD_ROWS` customers (index-only) as a JSON array
 * of `[id, created_at in microseconds since the epoch, as text]`. Parameters: the app twice, the
 * head's length, the app, `limit`, `offset`.
 */
export const NEWEST_CUSTOMERS_AND_HEAD = new PreparedStatement<
  CustomerRow & { total: string; version: string; head: [string, string][] }
>(
  'tollgate_newest_customers_and_head',
  `select t.total, t.version, h.head, c.*
     from (select coalesce(sum(n), 0) as total, ${SHARD_VERSIONS} as version
             from customer_count where app_id = ?) as t
     cross join (select coalesce(json_agg(json_build_array(x.id, ${micros('x.created_at')})
                          order by x.created_at desc, x.id desc), '[]') as head
                   from (select id, created_at from customer where app_id = ?
                          order by created_at desc, id desc limit ?) as x) as h
     left join (select id, created_at from customer where app_id = ?
                 order by created_at desc, id desc limit ? offset ?) as p on true
     left join customer as c on c.id = p.id
    order by p.created_at desc, p.id desc`,
);

/**
 * The app's total and the page at `offset` counted from the newest (`limit` rows), read from the oldest
 * end: for a page near it, the same rows as NEWEST_CUSTOMERS would give after walking the whole list.
 * Newest first; one row with a null customer when the page is empty. Parameters: the app (twice),
 * `limit`, `offset`, `limit`, `offset`. (The walk's limit is the constant `limit`, and a page cut short
 * by the end is cut by its row numbers: with a limit computed from the total, PostgreSQL guessed a
 * tenth of the app and joined the page to every customer.)
 */
export const OLDEST_CUSTOMERS = new PreparedStatement<CustomerRow & { total: string }>(
  'tollgate_oldest_customers',
  `select t.total, c.*
     from (select ${COUNT_SQL} as total) as t
     left join lateral (select s.id, s.created_at, row_number() over (order by s.created_at, s.id) as k
                          from (select id, created_at from customer where app_id = ?
                                 order by created_at asc, id asc
                                 limit ? offset greatest(0, t.total - ?::bigint - ?::bigint)) as s) as p
       on p.k <= t.total - ?::bigint
     left join customer as c on c.id = p.id
    order by p.created_at desc, p.id desc`,
);

/**
 * `key_ok`, and when it holds: the new customer's row, its audit event when an audited actor makes it
 * (`audit_id` not null, as the audit trail would append it on a flush), and its `customer.created` event
 * with a delivery for every enabled endpoint of the app that takes it (no event when none does, as
 * `OutboundEvents.record` writes it). A taken e-mail fails the whole statement (unique violation) and
 * writes nothing. The deliveries' ids are to be announced to the job queue after it (they have no job).
 */
export const CREATE_CUSTOMER = new PreparedStatement<
  Partial<CustomerRow> & { key_ok: boolean; delivery_ids: string[] }
>(
  'tollgate_create_customer',
  `with k as (${KEY_OK}),
   v as (
     select ?::text as id, ?::text as app_id, ?::text as email, ?::text as email_lower, ?::text as name,
            ?::jsonb as metadata,
            ?::timestamptz as at, ?::text as event_id, ?::text as event_body, ?::text as event_subjects,
            ?::text as audit_id, ?::text as actor_type, ?::text as actor_id, ?::text as actor_email,
            ?::text as ip, ?::text as user_agent, ?::jsonb as audit_changes
   ), created as (
     insert into customer (id, app_id, email, email_lower, name, metadata, created_at, updated_at)
     select v.id, v.app_id, v.email, v.email_lower, v.name, v.metadata, v.at, v.at from v, k where k.ok
     returning *
   ), audit as (
     insert into audit_event (id, at, action, target_id, app_id, actor_type, actor_id, actor_email, ip,
                              user_agent, changes, customer_id)
     select v.audit_id, v.at, 'customer.create', c.id, c.app_id, v.actor_type, v.actor_id, v.actor_email,
            v.ip, v.user_agent, v.audit_changes, c.id
       from v, created as c
      where v.audit_id is not null
   ), event as (
     insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
     select v.event_id, v.app_id, 'customer.created', v.event_body, v.event_subjects::jsonb, v.at
       from v, created
      where exists (${endpointsTakingSql('v.app_id', "'customer.created'::text")})
     returning id, app_id, created_at
   ), deliveries as (
     insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
     select ${deliveryIdSql('e.id', 't.n')}, e.id, t.id, 'pending', 0, e.created_at, e.created_at, e.created_at
       from event e cross join lateral (${endpointsTakingSql('e.app_id', "'customer.created'::text")}) t
     returning id
   )
   select k.ok as key_ok, coalesce((select array_agg(id) from deliveries), '{}') as delivery_ids, c.*
     from k left join created as c on true`,
);
