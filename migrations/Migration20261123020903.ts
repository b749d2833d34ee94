import { Migration } from '@mikro-orm/migrations';

/**
 * Customer lists at scale: an exact per-app count kept by statement triggers (customer_count, up to 64 shard
 * rows per app, the shard picked by the writing backend), the list order as a covering index, and the
 * app as the leading key of the trigram index (btree_gin).
 */
export class Migration20261123020903 extends Migration {

  override name = 'Migration20261123020903';

  override up(): void | Promise<void> {
    // btree_gin and pg_trgm are trusted extensions: a database owner may create them.
    this.addSql(`create extension if not exists btree_gin;`);

    this.addSql(`create table "customer_count" ("app_id" text not null, "shard" smallint not null, "n" bigint not null, primary key ("app_id", "shard"));`);
    this.addSql(`alter table "customer_count" add constraint "customer_count_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    // One upsert per statement and app. Rows are taken in app order, so two statements that touch the
    // same apps lock their counter rows in the same order. A delete or update cascading from an app's
    // own deletion skips that app: its counter rows go with it (foreign key), and writing one back
    // would violate that key.
    this.addSql(`create or replace function "customer_count_insert_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n) select app_id, pg_backend_pid() % 64, count(*) from new_rows group by app_id order by app_id on conflict (app_id, shard) do update set n = c.n + excluded.n; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_delete_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n) select o.app_id, pg_backend_pid() % 64, -count(*) from old_rows o where exists (select 1 from app a where a.id = o.app_id) group by o.app_id order by o.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_update_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n) select m.app_id, pg_backend_pid() % 64, sum(m.d) from (select app_id, 1 as d from new_rows union all select app_id, -1 from old_rows) m where exists (select 1 from app a where a.id = m.app_id) group by m.app_id having sum(m.d) <> 0 order by m.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_truncate_fn"() returns trigger as \$\$ begin delete from customer_count; return null; end; \$\$ language plpgsql;`);

    // Counted under a lock that holds writers back until the triggers exist, so no row is missed or
    // counted twice.
    this.addSql(`lock table "customer" in share row exclusive mode;`);
    this.addSql(`insert into customer_count (app_id, shard, n) select app_id, 0, count(*) from customer group by app_id;`);
    this.addSql(`create trigger "customer_count_truncate" after truncate on "customer" for each statement execute function "customer_count_truncate_fn"();`);
    this.addSql(`create trigger "customer_count_update" after update on "customer" referencing old table as old_rows new table as new_rows for each statement execute function "customer_count_update_fn"();`);
    this.addSql(`create trigger "customer_count_delete" after delete on "customer" referencing old table as old_rows for each statement execute function "customer_count_delete_fn"();`);
    this.addSql(`create trigger "customer_count_insert" after insert on "customer" referencing new table as new_rows for each statement execute function "customer_count_insert_fn"();`);

    this.addSql(`drop index "customer_app_id_created_at_index";`);
    this.addSql(`drop index "customer_email_lower_trgm_index";`);
    this.addSql(`create index "customer_app_id_email_lower_trgm_index" on "customer" using gin ("app_id", "email_lower" gin_trgm_ops);`);
    this.addSql(`create index "customer_app_id_created_at_id_index" on "customer" ("app_id", "created_at", "id") include ("email_lower");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "customer_count_truncate" on "customer";`);
    this.addSql(`drop function if exists "customer_count_truncate_fn"();`);
    this.addSql(`drop trigger if exists "customer_count_update" on "customer";`);
    this.addSql(`drop function if exists "customer_count_update_fn"();`);
    this.addSql(`drop trigger if exists "customer_count_delete" on "customer";`);
    this.addSql(`drop function if exists "customer_count_delete_fn"();`);
    this.addSql(`drop trigger if exists "customer_count_insert" on "customer";`);
    this.addSql(`drop function if exists "customer_count_insert_fn"();`);
    this.addSql(`drop table if exists "customer_count" cascade;`);

    this.addSql(`drop index "customer_app_id_email_lower_trgm_index";`);
    this.addSql(`drop index "customer_app_id_created_at_id_index";`);
    this.addSql(`create index "customer_app_id_created_at_index" on "customer" ("app_id", "created_at");`);
    this.addSql(`create index "customer_email_lower_trgm_index" on "customer" using gin ("email_lower" gin_trgm_ops);`);
  }

}
