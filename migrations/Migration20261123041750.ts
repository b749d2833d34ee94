import { Migration } from '@mikro-orm/migrations';

export class Migration20261123041750 extends Migration {

  override name = 'Migration20261123041750';

  override up(): void | Promise<void> {
    this.addSql(`create table "webhook_endpoint" ("id" text not null, "app_id" text not null, "url" text not null, "events" jsonb not null default '[]', "description" text null, "enabled" boolean not null default true, "secret_ciphertext" text not null, "previous_secret_ciphertext" text null, "previous_secret_expires_at" timestamptz null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "webhook_endpoint_app_id_created_at_index" on "webhook_endpoint" ("app_id", "created_at");`);

    this.addSql(`create table "webhook_event" ("id" text not null, "app_id" text not null, "type" text not null, "body" text not null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "webhook_event_app_id_created_at_index" on "webhook_event" ("app_id", "created_at");`);

    this.addSql(`create table "webhook_delivery" ("id" text not null, "event_id" text not null, "endpoint_id" text not null, "status" text not null default 'pending', "attempts" int not null default 0, "next_attempt_at" timestamptz null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "webhook_delivery_event_id_index" on "webhook_delivery" ("event_id");`);
    this.addSql(`create index "webhook_delivery_endpoint_id_created_at_index" on "webhook_delivery" ("endpoint_id", "created_at");`);

    this.addSql(`create table "webhook_attempt" ("id" text not null, "delivery_id" text not null, "attempted_at" timestamptz not null, "status_code" int null, "duration_ms" int not null, "excerpt" text not null, primary key ("id"));`);
    this.addSql(`create index "webhook_attempt_delivery_id_attempted_at_index" on "webhook_attempt" ("delivery_id", "attempted_at");`);

    this.addSql(`alter table "webhook_endpoint" add constraint "webhook_endpoint_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_event" add constraint "webhook_event_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_event_id_foreign" foreign key ("event_id") references "webhook_event" ("id") on delete cascade;`);
    this.addSql(`alter table "webhook_delivery" add constraint "webhook_delivery_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoint" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_attempt" add constraint "webhook_attempt_delivery_id_foreign" foreign key ("delivery_id") references "webhook_delivery" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_delivery" drop constraint "webhook_delivery_endpoint_id_foreign";`);
    this.addSql(`alter table "webhook_delivery" drop constraint "webhook_delivery_event_id_foreign";`);
    this.addSql(`alter table "webhook_attempt" drop constraint "webhook_attempt_delivery_id_foreign";`);

    this.addSql(`drop table if exists "webhook_endpoint" cascade;`);
    this.addSql(`drop table if exists "webhook_event" cascade;`);
    this.addSql(`drop table if exists "webhook_delivery" cascade;`);
    this.addSql(`drop table if exists "webhook_attempt" cascade;`);
  }

}
