import { Migration } from '@mikro-orm/migrations';

export class Migration20261121215340 extends Migration {

  override name = 'Migration20261121215340';

  override up(): void | Promise<void> {
    this.addSql(`create table "magic_link_request" ("id" uuid not null default gen_random_uuid(), "app_id" text not null, "email_lower" text not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "magic_link_request_app_id_email_lower_created_at_index" on "magic_link_request" ("app_id", "email_lower", "created_at");`);

    this.addSql(`alter table "magic_link_request" add constraint "magic_link_request_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "magic_link_request" cascade;`);
  }

}
