import { Migration } from '@mikro-orm/migrations';

/**
 * Erasure by subject id. Stored webhook events record the ids of the customers and organizations they
 * concern (`subject_ids`), and idempotency records can be tombstones (`erased_at`); both get the index a
 * customer's erasure looks them up by.
 *
 * Existing rows are attributed where their own data says whom they concern: an event by its type and
 * payload (the customer of a `customer.*` event; the `customerId` and `organizationId` of a subscription's
 * or entitlements' event), an idempotency record kept under a session by that session's customer (the
 * ids its request and answer named were recorded already). What cannot be attributed is deleted, as an
 * erasure could not find it later: events other than `plan.updated` with a delivery still pending (the
 * payload is never sent), and stored answers that name no customer (a repeat of such a request runs
 * again, once).
 */
export class Migration20261125181833 extends Migration {

  override name = 'Migration20261125181833';

  override up(): void | Promise<void> {
    this.addSql(`alter table "idempotency_record" add "erased_at" timestamptz null;`);
    this.addSql(`create index "idempotency_record_app_id_customer_ids_index" on "idempotency_record" using gin ("app_id", "customer_ids" jsonb_path_ops);`);

    this.addSql(`alter table "webhook_event" add "subject_ids" jsonb not null default '[]';`);
    this.addSql(`create index "webhook_event_app_id_subject_ids_index" on "webhook_event" using gin ("app_id", "subject_ids" jsonb_path_ops);`);

    this.addSql(`update "webhook_event" as e set "subject_ids" = s.ids from (select w.id, jsonb_agg(distinct v.subject order by v.subject) as ids from "webhook_event" as w cross join lateral (values (case when w.type like 'customer.%' then w.body::jsonb->'data'->>'id' end), (w.body::jsonb->'data'->>'customerId'), (w.body::jsonb->'data'->>'organizationId')) as v(subject) where v.subject is not null group by w.id) as s where e.id = s.id;`);
    this.addSql(`delete from "webhook_event" as e where e."subject_ids" = '[]' and e.type <> 'plan.updated' and exists (select 1 from "webhook_delivery" as d where d.event_id = e.id and d.status = 'pending');`);

    this.addSql(`update "idempotency_record" as r set "customer_ids" = r."customer_ids" || jsonb_build_array(s.customer_id) from "session" as s where s.id = r.credential_id and not r."customer_ids" @> jsonb_build_array(s.customer_id);`);
    this.addSql(`delete from "idempotency_record" where "customer_ids" = '[]' and "response_status" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "idempotency_record_app_id_customer_ids_index";`);
    this.addSql(`alter table "idempotency_record" drop column "erased_at";`);

    this.addSql(`drop index "webhook_event_app_id_subject_ids_index";`);
    this.addSql(`alter table "webhook_event" drop column "subject_ids";`);
  }

}
