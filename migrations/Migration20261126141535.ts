import { Migration } from '@mikro-orm/migrations';

export class Migration20261126141535 extends Migration {

  override name = 'Migration20261126141535';

  override up(): void | Promise<void> {
    this.addSql(`alter table "organization" add "seat_version" int not null default 0;`);

    this.addSql(`alter table "subscription" add "seat_quantity" int null, add "seat_version" int not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "organization" drop column "seat_version";`);

    this.addSql(`alter table "subscription" drop column "seat_quantity", drop column "seat_version";`);
  }

}
