import { Migration } from '@mikro-orm/migrations';

export class Migration20261126140711 extends Migration {

  override name = 'Migration20261126140711';

  override up(): void | Promise<void> {
    this.addSql(`create table "organization_invitation" ("id" text not null, "app_id" text not null, "organization_id" text not null, "customer_id" text null, "email" text not null, "email_lower" text not null, "role" text not null, "token_hash" text not null, "redirect_url" text not null, "state" text not null default 'pending', "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, "accepted_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "organization_invitation_customer_id_index" on "organization_invitation" ("customer_id");`);
    this.addSql(`alter table "organization_invitation" add constraint "organization_invitation_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "organization_invitation_app_id_email_lower_index" on "organization_invitation" ("app_id", "email_lower");`);
    this.addSql(`create index "organization_invitation_organization_id_created_at_index" on "organization_invitation" ("organization_id", "created_at");`);

    this.addSql(`alter table "app" add "invitation_expiry_hours" int not null default 168;`);

    this.addSql(`alter table "plan" add "seats" jsonb null;`);

    this.addSql(`alter table "organization_invitation" add constraint "organization_invitation_app_id_foreign" foreign key ("app_id") references "app" ("id") on delete cascade;`);
    this.addSql(`alter table "organization_invitation" add constraint "organization_invitation_organization_id_foreign" foreign key ("organization_id") references "organization" ("id") on delete cascade;`);
    this.addSql(`alter table "organization_invitation" add constraint "organization_invitation_customer_id_foreign" foreign key ("customer_id") references "customer" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "organization_invitation" cascade;`);

    this.addSql(`alter table "app" drop column "invitation_expiry_hours";`);

    this.addSql(`alter table "plan" drop column "seats";`);
  }

}
