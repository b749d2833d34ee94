import { Migration } from '@mikro-orm/migrations';

export class Migration20261123042017 extends Migration {

  override name = 'Migration20261123042017';

  override up(): void | Promise<void> {
    this.addSql(`create table "idempotency_record" ("credential_id" text not null, "key" text not null, "app_id" text not null, "fingerprint" text not null, "owner_token" text null, "locked_until" timestamptz null, "response_status" int null, "response_content_type" text null, "response_body" text null, "customer_ids" jsonb not null default '[]', "created_at" timestamptz not null, "expires_at" timestamptz not null, primary key ("credential_id", "key"));`);
    this.addSql(`create index "idempotency_record_app_id_index" on "idempotency_record" ("app_id");`);
    this.addSql(`create index "idempotency_record_expires_at_index" on "idempotency_record" ("expires_at");`);

    this.addSql(`alter table "subscription" drop constraint "subscription_customer_id_foreign";`);

    this.addSql(`alter table "subscription" add constraint "subscription_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete set null;`);

    this.addSql(`alter table "idempotency_record" add constraint "idempotency_record_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "idempotency_record" cascade;`);

    this.addSql(`alter table "subscription" drop constraint "subscription_customer_id_foreign";`);

    this.addSql(`alter table "subscription" add constraint "subscription_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on update no action on delete cascade;`);
  }

}
