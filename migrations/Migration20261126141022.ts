import { Migration } from '@mikro-orm/migrations';

export class Migration20261126141022 extends Migration {

  override name = 'Migration20261126141022';

  override up(): void | Promise<void> {
    this.addSql(`create table "mrr_daily" ("app_id" text not null, "currency" text not null, "day" date not null, "plan_id" text not null, "mrr_delta" bigint not null default '0', "active_delta" int not null default 0, "trialing_delta" int not null default 0, "new_mrr" bigint not null default '0', "expansion_mrr" bigint not null default '0', "contraction_mrr" bigint not null default '0', "churned_mrr" bigint not null default '0', "reactivation_mrr" bigint not null default '0', "new_subscriptions" int not null default 0, "canceled_subscriptions" int not null default 0, "trial_conversions" int not null default 0, primary key ("app_id", "currency", "day", "plan_id"));`);

    this.addSql(`create table "mrr_movement" ("id" text not null, "app_id" text not null, "subscription_id" text not null, "subject_id" text not null, "customer_id" text null, "organization_id" text null, "plan_id" text not null, "plan_before_id" text null, "currency" text not null, "mrr_before" bigint not null, "mrr_after" bigint not null, "subject_mrr_before" bigint not null, "subject_mrr_after" bigint not null, "kind" text null, "cause" text not null, "status_before" text null, "status_after" text not null, "started" boolean not null default false, "ended" boolean not null default false, "converted" boolean not null default false, "backfilled" boolean not null default false, "occurred_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "mrr_movement_organization_id_index" on "mrr_movement" ("organization_id");`);
    this.addSql(`create index "mrr_movement_customer_id_index" on "mrr_movement" ("customer_id");`);
    this.addSql(`create index "mrr_movement_subscription_id_index" on "mrr_movement" ("subscription_id");`);
    this.addSql(`create index "mrr_movement_app_id_subject_id_currency_index" on "mrr_movement" ("app_id", "subject_id", "currency");`);
    this.addSql(`create index "mrr_movement_app_id_occurred_at_index" on "mrr_movement" ("app_id", "occurred_at");`);

    this.addSql(`alter table "subscription" add "mrr_amount" bigint not null default '0', add "mrr_currency" text null, add "mrr_quantity" int not null default 0, add "mrr_discounts" jsonb not null default '[]', add "mrr_inputs" text null;`);

    this.addSql(`alter table "mrr_daily" add constraint "mrr_daily_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "mrr_movement" add constraint "mrr_movement_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "mrr_daily" cascade;`);
    this.addSql(`drop table if exists "mrr_movement" cascade;`);

    this.addSql(`alter table "subscription" drop column "mrr_amount", drop column "mrr_currency", drop column "mrr_quantity", drop column "mrr_discounts", drop column "mrr_inputs";`);
  }

}
