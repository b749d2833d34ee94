import { Migration } from '@mikro-orm/migrations';

/** Sets `mine` to this session's counter shard, claiming one on its first counted write (see the migration below). */
const CLAIM_SHARD = `mine int := nullif(current_setting('tollgate.customer_count_shard', true), ''); begin if mine is null then for i in 0..63 loop mine := (pg_backend_pid() + i) % 64; exit when pg_try_advisory_lock(1129535060, mine); mine := pg_backend_pid() % 64; end loop; perform set_config('tollgate.customer_count_shard', mine::text, false); end if;`;

/**
 * Each database session writes a counter shard that no other live session writes, so concurrent inserts
 * into one app never wait on each other's counter row.
 *
 * The shard was `pg_backend_pid() % 64`. Sessions opened in a burst have nearly consecutive process ids
 * and rarely share one, but a pool that opens and closes connections over hours can hold ids from the
 * whole range: among 10 such sessions two share a shard more often than not (1 − 63/64 × … × 55/64 ≈
 * 0.52), and whenever both insert into one app at once, one waits for the other's commit, WAL flush
 * included.
 *
 * Now a session claims its shard on its first counted write: the first of `pg_backend_pid() % 64`, the
 * next, and so on, whose session-level advisory lock (class 1129535060, the shard as second key) it
 * gets; held until the session ends, so no other live session can claim it. The shard is remembered in
 * the session setting `tollgate.customer_count_shard`. Once 64 sessions hold one, a further session
 * falls back to its `pg_backend_pid() % 64`, as before. A session keeps writing one shard, so two
 * transactions still cannot deadlock on counter rows. If the transaction that claimed rolls back, the
 * setting goes with it (the lock does not): the next write claims again, at worst a second shard.
 * Which shard a row is on never matters to the count or the version: both are sums over the shards.
 */
export class Migration20261125120000 extends Migration {

  override name = 'Migration20261125120000';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "customer_count_insert_fn"() returns trigger as \$\$ declare ${CLAIM_SHARD} insert into customer_count as c (app_id, shard, n, version) select app_id, mine, count(*), 1 from new_rows group by app_id order by app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_delete_fn"() returns trigger as \$\$ declare ${CLAIM_SHARD} insert into customer_count as c (app_id, shard, n, version) select o.app_id, mine, -count(*), 1 from old_rows o where exists (select 1 from app a where a.id = o.app_id) group by o.app_id order by o.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_update_fn"() returns trigger as \$\$ declare ${CLAIM_SHARD} insert into customer_count as c (app_id, shard, n, version) select m.app_id, mine, sum(m.d), 1 from (select app_id, 1 as d from (select id, app_id, created_at, email_lower from new_rows except all select id, app_id, created_at, email_lower from old_rows) as added union all select app_id, -1 from (select id, app_id, created_at, email_lower from old_rows except all select id, app_id, created_at, email_lower from new_rows) as removed) m where exists (select 1 from app a where a.id = m.app_id) group by m.app_id order by m.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create or replace function "customer_count_insert_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n, version) select app_id, pg_backend_pid() % 64, count(*), 1 from new_rows group by app_id order by app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_delete_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n, version) select o.app_id, pg_backend_pid() % 64, -count(*), 1 from old_rows o where exists (select 1 from app a where a.id = o.app_id) group by o.app_id order by o.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create or replace function "customer_count_update_fn"() returns trigger as \$\$ begin insert into customer_count as c (app_id, shard, n, version) select m.app_id, pg_backend_pid() % 64, sum(m.d), 1 from (select app_id, 1 as d from (select id, app_id, created_at, email_lower from new_rows except all select id, app_id, created_at, email_lower from old_rows) as added union all select app_id, -1 from (select id, app_id, created_at, email_lower from old_rows except all select id, app_id, created_at, email_lower from new_rows) as removed) m where exists (select 1 from app a where a.id = m.app_id) group by m.app_id order by m.app_id on conflict (app_id, shard) do update set n = c.n + excluded.n, version = c.version + 1; return null; end; \$\$ language plpgsql;`);
  }

}
