import { Migration } from '@mikro-orm/migrations';

/**
 * A per-app write version beside the customer count, so an instance may reuse a filtered count or a
 * remembered list position exactly while the app's customers are unchanged. The count triggers advance
 * it in the upsert they already make (no extra statement on a write): every statement that inserts,
 * deletes, or changes a row's id, app, creation time or e-mail adds 1 to the version of the shard row it
 * writes, and TRUNCATE adds 1 to every row instead of deleting them, so an app's version (the sum of its
 * shards) only ever grows: a later snapshot that reads the same sum holds the same customers.
 */
export class Migration20261125110500 extends Migration {

  override name = 'Migration20261125110500';

  override up(): void | Promise<void> {
    this.addSql(`alter table "customer_count" add column "version" bigint not null default '0';`);

    this.addSql(`create or replace function "customer_count_insert_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n, version) select app_id, pg_backend_pid() % 64, count(*), 1 from new_rows group by app_id order by app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_delete_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n, version) select o.app_id, pg_backend_pid() % 64, -count(*), 1 from old_rows o where exists (select 1 from app a where a.id = o.app_id) group by o.app_id order by o.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    // Only rows whose list key or e-mail changed count: a rename or a metadata change writes no counter
    // row. Rows changed the same way on both sides (EXCEPT ALL) cancel out, so an app whose rows moved
    // or changed gets its count difference and one version step.
    this.addSql(`create or replace function "customer_count_update_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n, version) select m.app_id, pg_backend_pid() % 64, sum(m.d), 1 from (select app_id, 1 as d from (select id, app_id, created_at, email_lower from new_rows except all select id, app_id, created_at, email_lower from old_rows) as added union all select app_id, -1 from (select id, app_id, created_at, email_lower from old_rows except all select id, app_id, created_at, email_lower from new_rows) as removed) m where exists (select 1 from app a where a.id = m.app_id) group by m.app_id order by m.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    // Emptied, not deleted: a deleted row would take its share of the version with it.
    this.addSql(`create or replace function "customer_count_truncate_fn"() returns trigger as \$\$ begin update customer_count set n = 0, version = version + 1; return null; end; \$\$ language plpgsql;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create or replace function "customer_count_insert_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n) select app_id, pg_backend_pid() % 64, count(*) from new_rows group by app_id order by app_id on conflict (app_id, shard) do update set n = c.n + excluded.n; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_delete_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n) select o.app_id, pg_backend_pid() % 64, -count(*) from old_rows o where exists (select 1 from app a where a.id = o.app_id) group by o.app_id order by o.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_update_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n) select m.app_id, pg_backend_pid() % 64, sum(m.d) from (select app_id, 1 as d from new_rows union all select app_id, -1 from old_rows) m where exists (select 1 from app a where a.id = m.app_id) group by m.app_id having sum(m.d) <> 0 order by m.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_truncate_fn"() returns trigger as \$\$ begin delete from customer_count; return null; end; \$\$ language plpgsql;`);
    this.addSql(`alter table "customer_count" drop column "version";`);
  }

}
