import { Migration } from '@mikro-orm/migrations';

/**
 * Notices of balance changes for the instances' balance caches: row triggers on `credit_bucket`
 * (src/modules/metering/balance-notices.ts) announce a grant added, a bucket deleted and a change of any
 * field but the counters on the channel `tollgate_balances`. Consumptions and refunds are announced by
 * the instance that made them, after their commit.
 */
export class Migration20261126202842 extends Migration {

  override name = 'Migration20261126202842';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function "credit_bucket_balance_notice_update_fn"() returns trigger as \$\$ begin if new.id is not distinct from old.id and new.app_id is not distinct from old.app_id and new.subject_id is not distinct from old.subject_id and new.customer_id is not distinct from old.customer_id and new.organization_id is not distinct from old.organization_id and new.feature is not distinct from old.feature and new.kind is not distinct from old.kind and new.amount is not distinct from old.amount and new.priority is not distinct from old.priority and new.period_end is not distinct from old.period_end and new.expires_at is not distinct from old.expires_at and new.voided_at is not distinct from old.voided_at and new.created_at is not distinct from old.created_at then return null; end if; if new.subject_id is distinct from old.subject_id then perform pg_notify('tollgate_balances', old.subject_id); end if; perform pg_notify('tollgate_balances', new.subject_id); return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "balance_notice_update" AFTER UPDATE on "credit_bucket" for each ROW execute function "credit_bucket_balance_notice_update_fn"();`);
    this.addSql(`create or replace function "credit_bucket_balance_notice_delete_fn"() returns trigger as \$\$ begin perform pg_notify('tollgate_balances', old.subject_id); return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "balance_notice_delete" AFTER DELETE on "credit_bucket" for each ROW execute function "credit_bucket_balance_notice_delete_fn"();`);
    this.addSql(`create or replace function "credit_bucket_balance_notice_insert_fn"() returns trigger as \$\$ begin if new.kind <> 'grant' then return null; end if; perform pg_notify('tollgate_balances', new.subject_id); return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "balance_notice_insert" AFTER INSERT on "credit_bucket" for each ROW execute function "credit_bucket_balance_notice_insert_fn"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "balance_notice_update" on "credit_bucket";`);
    this.addSql(`drop function if exists "credit_bucket_balance_notice_update_fn"();`);
    this.addSql(`drop trigger if exists "balance_notice_delete" on "credit_bucket";`);
    this.addSql(`drop function if exists "credit_bucket_balance_notice_delete_fn"();`);
    this.addSql(`drop trigger if exists "balance_notice_insert" on "credit_bucket";`);
    this.addSql(`drop function if exists "credit_bucket_balance_notice_insert_fn"();`);

  }

}
