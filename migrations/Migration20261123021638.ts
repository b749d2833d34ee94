import { Migration } from '@mikro-orm/migrations';

export class Migration20261123021638 extends Migration {

  override name = 'Migration20261123021638';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "api_key_changes_notify_fn"() returns trigger as \$\$ begin if tg_op = 'UPDATE' and new.revoked_at is not distinct from old.revoked_at and new.key_hash = old.key_hash and new.app_id = old.app_id then return null; end if; if tg_op <> 'INSERT' then perform pg_notify('tollgate_changes', json_build_object('t', 'apiKey', 'id', old.id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_changes', json_build_object('t', 'apiKey', 'id', new.id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "changes_notify" AFTER UPDATE OR DELETE on "api_key" for each ROW execute function "api_key_changes_notify_fn"();`);

    this.addSql(`create or replace function "customer_changes_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_changes', json_build_object('t', 'customer', 'id', old.id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_changes', json_build_object('t', 'customer', 'id', new.id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "changes_notify" AFTER UPDATE OR DELETE on "customer" for each ROW execute function "customer_changes_notify_fn"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "changes_notify" on "api_key";`);
    this.addSql(`drop function if exists "api_key_changes_notify_fn"();`);

    this.addSql(`drop trigger if exists "changes_notify" on "customer";`);
    this.addSql(`drop function if exists "customer_changes_notify_fn"();`);
  }

}
