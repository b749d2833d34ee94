import { Migration } from '@mikro-orm/migrations';

export class Migration20261121215352 extends Migration {

  override name = 'Migration20261121215352';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "plan_entitlements_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_entitlements', json_build_object('app', old.app_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_entitlements', json_build_object('app', new.app_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "entitlements_notify" AFTER INSERT OR UPDATE OR DELETE on "plan" for each ROW execute function "plan_entitlements_notify_fn"();`);

    this.addSql(`create or replace function "subscription_entitlements_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_entitlements', json_build_object('app', old.app_id, 'customer', old.customer_id, 'organization', old.organization_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_entitlements', json_build_object('app', new.app_id, 'customer', new.customer_id, 'organization', new.organization_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "entitlements_notify" AFTER INSERT OR UPDATE OR DELETE on "subscription" for each ROW execute function "subscription_entitlements_notify_fn"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "entitlements_notify" on "plan";`);
    this.addSql(`drop function if exists "plan_entitlements_notify_fn"();`);

    this.addSql(`drop trigger if exists "entitlements_notify" on "subscription";`);
    this.addSql(`drop function if exists "subscription_entitlements_notify_fn"();`);
  }

}
