import { Migration } from '@mikro-orm/migrations';

/**
 * Named dashboard operators (their e-mailed sign-in links and cookie sessions, each row going with its
 * operator) and the audit log of writes by operators, API keys and the admin token.
 */
export class Migration20261126171604 extends Migration {
  override name = 'Migration20261126171604';

  override up(): void | Promise<void> {
    this.addSql(`create table "audit_event" ("id" text not null, "at" timestamptz not null default now(), "action" text not null, "target_id" text null, "app_id" text null, "actor_type" text not null, "actor_id" text null, "actor_email" text null, "ip" text null, "user_agent" text null, "changes" jsonb null, "customer_id" text null, primary key ("id"));`);
    this.addSql(`create index "audit_event_customer_id_index" on "audit_event" ("customer_id");`);
    this.addSql(`create index "audit_event_target_id_index" on "audit_event" ("target_id");`);
    this.addSql(`create index "audit_event_actor_id_at_index" on "audit_event" ("actor_id", "at");`);
    this.addSql(`create index "audit_event_app_id_at_index" on "audit_event" ("app_id", "at");`);
    this.addSql(`create index "audit_event_at_id_index" on "audit_event" ("at", "id");`);

    this.addSql(`create table "operator" ("id" text not null, "email" text not null, "email_lower" text not null, "role" text not null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`);
    this.addSql(`alter table "operator" add constraint "operator_email_lower_unique" unique ("email_lower");`);

    this.addSql(`create table "operator_session" ("id" text not null, "operator_id" text not null, "token_hash" text not null, "created_at" timestamptz not null default now(), "last_seen_at" timestamptz not null default now(), "expires_at" timestamptz not null, "revoked_at" timestamptz null, "ip" text null, "user_agent" text null, primary key ("id"));`);
    this.addSql(`create index "operator_session_operator_id_index" on "operator_session" ("operator_id");`);
    this.addSql(`alter table "operator_session" add constraint "operator_session_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "operator_sign_in_token" ("id" text not null, "operator_id" text not null, "token_hash" text not null, "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, "consumed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "operator_sign_in_token_operator_id_index" on "operator_sign_in_token" ("operator_id");`);
    this.addSql(`alter table "operator_sign_in_token" add constraint "operator_sign_in_token_token_hash_unique" unique ("token_hash");`);

    this.addSql(`alter table "operator_session" add constraint "operator_session_operator_id_foreign" foreign key ("operator_id") references "operator" ("id") on delete cascade;`);

    this.addSql(`alter table "operator_sign_in_token" add constraint "operator_sign_in_token_operator_id_foreign" foreign key ("operator_id") references "operator" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "operator_sign_in_token" cascade;`);
    this.addSql(`drop table if exists "operator_session" cascade;`);
    this.addSql(`drop table if exists "operator" cascade;`);
    this.addSql(`drop table if exists "audit_event" cascade;`);
  }
}
