import { Migration } from '@mikro-orm/migrations';

export class Migration20261125193133 extends Migration {

  override name = 'Migration20261125193133';

  override up(): void | Promise<void> {
    this.addSql(`create table "entitlement_signing_key" ("id" text not null, "app_id" text not null, "algorithm" text not null, "public_jwk" jsonb not null, "private_key_sealed" text not null, "created_at" timestamptz not null default now(), "signs_from" timestamptz not null, "retire_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "entitlement_signing_key_app_id_index" on "entitlement_signing_key" ("app_id");`);

    this.addSql(`alter table "app" add "entitlement_token_ttl_seconds" int not null default 300;`);

    this.addSql(`alter table "entitlement_signing_key" add constraint "entitlement_signing_key_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "entitlement_signing_key" cascade;`);

    this.addSql(`alter table "app" drop column "entitlement_token_ttl_seconds";`);
  }

}
