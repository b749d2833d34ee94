import { Migration } from '@mikro-orm/migrations';

export class Migration20261125181853 extends Migration {

  override name = 'Migration20261125181853';

  override up(): void | Promise<void> {
    this.addSql(`create table "open_checkout" ("id" text not null, "app_id" text not null, "customer_id" text null, "organization_id" text null, "email_lower" text null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "open_checkout_app_id_expires_at_index" on "open_checkout" ("app_id", "expires_at");`);
    this.addSql(`create index "open_checkout_app_id_email_lower_index" on "open_checkout" ("app_id", "email_lower");`);
    this.addSql(`create index "open_checkout_app_id_organization_id_index" on "open_checkout" ("app_id", "organization_id");`);
    this.addSql(`create index "open_checkout_app_id_customer_id_index" on "open_checkout" ("app_id", "customer_id");`);

    this.addSql(`alter table "app" add "allow_multiple_subscriptions" boolean not null default false;`);

    this.addSql(`alter table "open_checkout" add constraint "open_checkout_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
    this.addSql(`alter table "open_checkout" add constraint "open_checkout_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete cascade;`);
    this.addSql(`alter table "open_checkout" add constraint "open_checkout_organization_id_foreign" foreign key ("organization_id") references "organization" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "open_checkout" cascade;`);

    this.addSql(`alter table "app" drop column "allow_multiple_subscriptions";`);
  }

}
