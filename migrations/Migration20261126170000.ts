import { Migration } from '@mikro-orm/migrations';

/**
 * The rows each statement adds to or removes from an app's customer list, announced on
 * `tollgate_customer_rows` with the counter shard's version after the statement, so an instance can
 * adjust a remembered total and its remembered positions instead of counting again (see
 * src/modules/customers/customer-list-cache.ts).
 *
 * The count trigger of the same statement has claimed the session's shard and added 1 to its version
 * (migration Migration20261125120000); these triggers fire after it (name order) and read that version
 * under the row lock the count trigger holds. An update announces the same rows the count trigger
 * counts: those whose id, app, creation time or e-mail changed. A notice is sent only for an app whose
 * shard row exists (an app deleted with its customers has none). A statement too large for one notice
 * (PostgreSQL refuses payloads of 8 000 bytes) sends the version alone, and every instance counts that
 * app's lists again.
 */
const notice = (added: string, removed: string) =>
  `declare mine smallint := nullif(current_setting('tollgate.customer_count_shard', true), '')::smallint; r record; payload text; begin if mine is null then return null; end if; for r in with added as (${added}), removed as (${removed}) select c.app_id, c.version, (select json_agg(json_build_array(a.id, (extract(epoch from a.created_at) * 1000000)::bigint, a.email_lower)) from added a where a.app_id = c.app_id) as ins, (select json_agg(json_build_array(d.id, (extract(epoch from d.created_at) * 1000000)::bigint, d.email_lower)) from removed d where d.app_id = c.app_id) as del from customer_count c where c.shard = mine and c.app_id in (select app_id from added union select app_id from removed) order by c.app_id loop payload := json_build_object('app', r.app_id, 'shard', mine, 'v', r.version, 'ins', coalesce(r.ins, '[]'::json), 'del', coalesce(r.del, '[]'::json))::text; if octet_length(payload) > 7900 then payload := json_build_object('app', r.app_id, 'shard', mine, 'v', r.version)::text; end if; perform pg_notify('tollgate_customer_rows', payload); end loop; return null; end;`;

const NONE = 'select null::text as id, null::text as app_id, null::timestamptz as created_at, null::text as email_lower where false';
const KEYS = 'select id, app_id, created_at, email_lower from';

export class Migration20261126170000 extends Migration {
  override name = 'Migration20261126170000';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "customer_list_rows_insert_fn"() returns trigger as \$\$ ${notice(`${KEYS} new_rows`, NONE)} \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_list_rows_delete_fn"() returns trigger as \$\$ ${notice(NONE, `${KEYS} old_rows`)} \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_list_rows_update_fn"() returns trigger as \$\$ ${notice(`${KEYS} new_rows except all ${KEYS} old_rows`, `${KEYS} old_rows except all ${KEYS} new_rows`)} \$\$ language plpgsql;`);
    this.addSql(`create trigger "customer_list_rows_insert" after insert on "customer" referencing new table as new_rows for each statement execute function "customer_list_rows_insert_fn"();`);
    this.addSql(`create trigger "customer_list_rows_delete" after delete on "customer" referencing old table as old_rows for each statement execute function "customer_list_rows_delete_fn"();`);
    this.addSql(`create trigger "customer_list_rows_update" after update on "customer" referencing old table as old_rows new table as new_rows for each statement execute function "customer_list_rows_update_fn"();`);
  }

  override down(): void | Promise<void> {
    for (const event of ['insert', 'delete', 'update']) {
      this.addSql(`drop trigger if exists "customer_list_rows_${event}" on "customer";`);
      this.addSql(`drop function if exists "customer_list_rows_${event}_fn"();`);
    }
  }
}
