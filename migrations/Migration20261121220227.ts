import { Migration } from '@mikro-orm/migrations';

export class Migration20261121220227 extends Migration {

  override name = 'Migration20261121220227';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "organization_member_changes_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_changes', json_build_object('t', 'member', 'organization', old.organization_id, 'customer', old.customer_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_changes', json_build_object('t', 'member', 'organization', new.organization_id, 'customer', new.customer_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "changes_notify" AFTER INSERT OR UPDATE OR DELETE on "organization_member" for each ROW execute function "organization_member_changes_notify_fn"();`);

    this.addSql(`drop trigger if exists "entitlements_notify" on "plan";`);
    this.addSql(`drop function if exists "plan_entitlements_notify_fn"();`);
    this.addSql(`create or replace function "plan_changes_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_changes', json_build_object('t', 'plan', 'app', old.app_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_changes', json_build_object('t', 'plan', 'app', new.app_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "changes_notify" AFTER INSERT OR UPDATE OR DELETE on "plan" for each ROW execute function "plan_changes_notify_fn"();`);

    this.addSql(`create or replace function "session_changes_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_changes', json_build_object('t', 'session', 'id', old.id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_changes', json_build_object('t', 'session', 'id', new.id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "changes_notify" AFTER UPDATE OR DELETE on "session" for each ROW execute function "session_changes_notify_fn"();`);

    this.addSql(`drop trigger if exists "entitlements_notify" on "subscription";`);
    this.addSql(`drop function if exists "subscription_entitlements_notify_fn"();`);
    this.addSql(`create or replace function "subscription_changes_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_changes', json_build_object('t', 'subscription', 'app', old.app_id, 'customer', old.customer_id, 'organization', old.organization_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_changes', json_build_object('t', 'subscription', 'app', new.app_id, 'customer', new.customer_id, 'organization', new.organization_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "changes_notify" AFTER INSERT OR UPDATE OR DELETE on "subscription" for each ROW execute function "subscription_changes_notify_fn"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "changes_notify" on "organization_member";`);
    this.addSql(`drop function if exists "organization_member_changes_notify_fn"();`);

    this.addSql(`drop trigger if exists "changes_notify" on "plan";`);
    this.addSql(`drop function if exists "plan_changes_notify_fn"();`);
    this.addSql(`create or replace function "plan_entitlements_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_entitlements', json_build_object('app', old.app_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_entitlements', json_build_object('app', new.app_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "entitlements_notify" AFTER DELETE OR INSERT OR UPDATE on "plan" for each ROW execute function "plan_entitlements_notify_fn"();`);

    this.addSql(`drop trigger if exists "changes_notify" on "session";`);
    this.addSql(`drop function if exists "session_changes_notify_fn"();`);

    this.addSql(`drop trigger if exists "changes_notify" on "subscription";`);
    this.addSql(`drop function if exists "subscription_changes_notify_fn"();`);
    this.addSql(`create or replace function "subscription_entitlements_notify_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then perform pg_notify('tollgate_entitlements', json_build_object('app', old.app_id, 'customer', old.customer_id, 'organization', old.organization_id)::text); end if; if tg_op <> 'DELETE' then perform pg_notify('tollgate_entitlements', json_build_object('app', new.app_id, 'customer', new.customer_id, 'organization', new.organization_id)::text); end if; return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "entitlements_notify" AFTER DELETE OR INSERT OR UPDATE on "subscription" for each ROW execute function "subscription_entitlements_notify_fn"();`);
  }

}
