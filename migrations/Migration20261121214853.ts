import { Migration } from '@mikro-orm/migrations';

export class Migration20261121214853 extends Migration {

  override name = 'Migration20261121214853';

  override up(): void | Promise<void> {
    // Trigram index support for the case-insensitive substring filter on customer e-mail.
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(`create table "app" ("id" text not null, "name" text not null, "auto_create_customer" boolean not null default true, "magic_link_expiry_minutes" int not null default 15, "allowed_callback_urls" text not null default '', "custom_verification_url" text null, "trial_payment_method" text not null default 'require_payment_method', "organizations_enabled" boolean not null default false, "session_ttl_seconds" int not null default 2592000, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);

    this.addSql(`create table "api_key" ("id" text not null, "app_id" text not null, "key_hash" text not null, "prefix" text not null, "created_at" timestamptz not null default now(), "last_used_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "api_key_app_id_index" on "api_key" ("app_id");`);
    this.addSql(`alter table "api_key" add constraint "api_key_key_hash_unique" unique ("key_hash");`);

    this.addSql(`create table "customer" ("id" text not null, "app_id" text not null, "email" text not null, "email_lower" text not null, "name" text null, "metadata" jsonb not null default '{}', "payment_customer_id" text null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "customer_email_lower_trgm_index" on "customer" using gin ("email_lower" gin_trgm_ops);`);
    this.addSql(`create index "customer_app_id_created_at_index" on "customer" ("app_id", "created_at");`);
    this.addSql(`alter table "customer" add constraint "customer_app_id_email_lower_unique" unique ("app_id", "email_lower");`);

    this.addSql(`create table "magic_link_token" ("id" text not null, "app_id" text not null, "customer_id" text not null, "email_lower" text not null, "token_hash" text not null, "redirect_url" text not null, "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, "consumed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "magic_link_token" add constraint "magic_link_token_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "magic_link_token_app_id_email_lower_created_at_index" on "magic_link_token" ("app_id", "email_lower", "created_at");`);

    this.addSql(`create table "organization" ("id" text not null, "app_id" text not null, "name" text not null, "metadata" jsonb not null default '{}', "payment_customer_id" text null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "organization_app_id_created_at_index" on "organization" ("app_id", "created_at");`);

    this.addSql(`create table "organization_member" ("id" text not null, "organization_id" text not null, "customer_id" text not null, "role" text not null, "created_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`create index "organization_member_customer_id_index" on "organization_member" ("customer_id");`);
    this.addSql(`alter table "organization_member" add constraint "organization_member_organization_id_customer_id_unique" unique ("organization_id", "customer_id");`);

    this.addSql(`create table "plan" ("id" text not null, "app_id" text not null, "slug" text not null, "name" text not null, "stripe_price_id" text null, "trial_days" int not null default 0, "features" jsonb not null default '{}', "is_default" boolean not null default false, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`alter table "plan" add constraint "plan_app_id_slug_unique" unique ("app_id", "slug");`);

    this.addSql(`create table "processed_event" ("id" text not null, "type" text not null, "processed_at" timestamptz not null default now(), primary key ("id"));`);

    this.addSql(`create table "session" ("id" text not null, "app_id" text not null, "customer_id" text not null, "organization_id" text null, "token_hash" text not null, "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "session_customer_id_index" on "session" ("customer_id");`);
    this.addSql(`alter table "session" add constraint "session_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "subscription" ("id" text not null, "app_id" text not null, "customer_id" text null, "organization_id" text null, "plan_id" text not null, "stripe_subscription_id" text not null, "stripe_customer_id" text not null, "status" text not null, "current_period_end" timestamptz null, "cancel_at_period_end" boolean not null default false, "trial_end" timestamptz null, "canceled_at" timestamptz null, "metadata" jsonb not null default '{}', "provider_event_created" bigint not null default '0', "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`alter table "subscription" add constraint "subscription_stripe_subscription_id_unique" unique ("stripe_subscription_id");`);
    this.addSql(`create index "subscription_organization_id_created_at_index" on "subscription" ("organization_id", "created_at");`);
    this.addSql(`create index "subscription_customer_id_created_at_index" on "subscription" ("customer_id", "created_at");`);

    this.addSql(`alter table "api_key" add constraint "api_key_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "customer" add constraint "customer_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "magic_link_token" add constraint "magic_link_token_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
    this.addSql(`alter table "magic_link_token" add constraint "magic_link_token_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete cascade;`);

    this.addSql(`alter table "organization" add constraint "organization_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "organization_member" add constraint "organization_member_organization_id_foreign" foreign key ("organization_id") references "organization" ("id") on delete cascade;`);
    this.addSql(`alter table "organization_member" add constraint "organization_member_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete cascade;`);

    this.addSql(`alter table "plan" add constraint "plan_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);

    this.addSql(`alter table "session" add constraint "session_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
    this.addSql(`alter table "session" add constraint "session_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete cascade;`);
    this.addSql(`alter table "session" add constraint "session_organization_id_foreign" foreign key ("organization_id") references "organization" ("id") on delete cascade;`);

    this.addSql(`alter table "subscription" add constraint "subscription_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
    this.addSql(`alter table "subscription" add constraint "subscription_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete cascade;`);
    this.addSql(`alter table "subscription" add constraint "subscription_organization_id_foreign" foreign key ("organization_id") references "organization" ("id") on delete cascade;`);
    this.addSql(`alter table "subscription" add constraint "subscription_plan_id_foreign" foreign key ("plan_id") references "plan" ("id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "api_key" drop constraint "api_key_app_id_foreign";`);
    this.addSql(`alter table "customer" drop constraint "customer_app_id_foreign";`);
    this.addSql(`alter table "magic_link_token" drop constraint "magic_link_token_app_id_foreign";`);
    this.addSql(`alter table "organization" drop constraint "organization_app_id_foreign";`);
    this.addSql(`alter table "plan" drop constraint "plan_app_id_foreign";`);
    this.addSql(`alter table "session" drop constraint "session_app_id_foreign";`);
    this.addSql(`alter table "subscription" drop constraint "subscription_app_id_foreign";`);
    this.addSql(`alter table "magic_link_token" drop constraint "magic_link_token_customer_id_foreign";`);
    this.addSql(`alter table "organization_member" drop constraint "organization_member_customer_id_foreign";`);
    this.addSql(`alter table "session" drop constraint "session_customer_id_foreign";`);
    this.addSql(`alter table "subscription" drop constraint "subscription_customer_id_foreign";`);
    this.addSql(`alter table "organization_member" drop constraint "organization_member_organization_id_foreign";`);
    this.addSql(`alter table "session" drop constraint "session_organization_id_foreign";`);
    this.addSql(`alter table "subscription" drop constraint "subscription_organization_id_foreign";`);
    this.addSql(`alter table "subscription" drop constraint "subscription_plan_id_foreign";`);

    this.addSql(`drop table if exists "app" cascade;`);
    this.addSql(`drop table if exists "api_key" cascade;`);
    this.addSql(`drop table if exists "customer" cascade;`);
    this.addSql(`drop table if exists "magic_link_token" cascade;`);
    this.addSql(`drop table if exists "organization" cascade;`);
    this.addSql(`drop table if exists "organization_member" cascade;`);
    this.addSql(`drop table if exists "plan" cascade;`);
    this.addSql(`drop table if exists "processed_event" cascade;`);
    this.addSql(`drop table if exists "session" cascade;`);
    this.addSql(`drop table if exists "subscription" cascade;`);
  }

}
