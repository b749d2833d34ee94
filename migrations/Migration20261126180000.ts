import { Migration } from '@mikro-orm/migrations';

/**
 * What the dashboard's everyday actions need: a plan can be archived (sold no more, kept by the
 * subscriptions on it), an API key can carry a name, and a webhook attempt keeps the headers it sent so
 * the operator can see the request beside the receiver's answer.
 */
export class Migration20261126180000 extends Migration {
  override name = 'Migration20261126180000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "plan" add column "archived" boolean not null default false;`);
    this.addSql(`alter table "api_key" add column "name" text null;`);
    this.addSql(`alter table "webhook_attempt" add column "request_headers" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_attempt" drop column "request_headers";`);
    this.addSql(`alter table "api_key" drop column "name";`);
    this.addSql(`alter table "plan" drop column "archived";`);
  }
}
