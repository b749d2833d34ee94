import { Migration } from '@mikro-orm/migrations';

/**
 * Metered features: credit buckets (a period's allowance, its rollover, grants) and the usage records
 * that say which buckets paid for each consumption. Both carry their subject's ids as plain columns.
 */
export class Migration20261125181650 extends Migration {

  override name = 'Migration20261125181650';

  override up(): void | Promise<void> {
    this.addSql(`create table "credit_bucket" ("id" text not null, "app_id" text not null, "subject_id" text not null, "customer_id" text null, "organization_id" text null, "feature" text not null, "kind" text not null, "amount" bigint null, "spent" bigint not null default '0', "used" bigint not null default '0', "priority" int not null default 50, "period_end" timestamptz null, "expires_at" timestamptz null, "description" text null, "voided_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "credit_bucket_organization_id_index" on "credit_bucket" ("organization_id");`);
    this.addSql(`create index "credit_bucket_customer_id_index" on "credit_bucket" ("customer_id");`);
    this.addSql(`alter table "credit_bucket" add constraint "credit_bucket_subject_id_feature_kind_period_end_unique" unique ("subject_id", "feature", "kind", "period_end");`);

    this.addSql(`create table "usage_record" ("id" text not null, "app_id" text not null, "subject_id" text not null, "customer_id" text null, "organization_id" text null, "feature" text not null, "amount" bigint not null, "period_end" timestamptz not null, "sources" jsonb not null, "metadata" jsonb not null default '{}', "refunded_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "usage_record_organization_id_index" on "usage_record" ("organization_id");`);
    this.addSql(`create index "usage_record_customer_id_index" on "usage_record" ("customer_id");`);
    this.addSql(`create index "usage_record_subject_id_created_at_index" on "usage_record" ("subject_id", "created_at");`);

    this.addSql(`alter table "credit_bucket" add constraint "credit_bucket_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "usage_record" add constraint "usage_record_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "credit_bucket" cascade;`);
    this.addSql(`drop table if exists "usage_record" cascade;`);
  }

}
