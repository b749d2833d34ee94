import { Migration } from '@mikro-orm/migrations';

export class Migration20261123041656 extends Migration {

  override name = 'Migration20261123041656';

  override up(): void | Promise<void> {
    this.addSql(`create index "customer_payment_customer_id_index" on "customer" ("payment_customer_id");`);

    this.addSql(`create index "organization_payment_customer_id_index" on "organization" ("payment_customer_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "customer_payment_customer_id_index";`);

    this.addSql(`drop index "organization_payment_customer_id_index";`);
  }

}
