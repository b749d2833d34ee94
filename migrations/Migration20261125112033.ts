import { Migration } from '@mikro-orm/migrations';

export class Migration20261125112033 extends Migration {

  override name = 'Migration20261125112033';

  override up(): void | Promise<void> {
    this.addSql(`create index "webhook_event_created_at_index" on "webhook_event" ("created_at");`);

    this.addSql(`alter table "webhook_delivery" add "claimed_until" timestamptz null;`);
    this.addSql(`create index "webhook_delivery_status_next_attempt_at_index" on "webhook_delivery" ("status", "next_attempt_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_delivery_status_next_attempt_at_index";`);
    this.addSql(`alter table "webhook_delivery" drop column "claimed_until";`);

    this.addSql(`drop index "webhook_event_created_at_index";`);
  }

}
