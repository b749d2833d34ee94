import { connect, type Orm } from '../../src/db.js';
import { createScratchDatabase, dropDatabase } from '../../src/infra/database-admin.js';

/**
 * Migration20261125181833 on rows written before it: what it can attribute gets its subject ids, and
 * what it cannot (undelivered payloads, stored answers naming no customer) is deleted, since a customer's
 * erasure, which selects by id alone, could never find it.
 */

const BEFORE = 'Migration20261125120000';
const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
const name = `tollgate_erasure_migration_${process.pid}_${Date.now()}`;
let orm: Orm;

beforeAll(async () => {
  orm = await connect(await createScratchDatabase(serverUrl, name), { pool: { min: 0, max: 2 } });
});

afterAll(async () => {
  await orm?.close(true);
  await dropDatabase(serverUrl, name);
});

const sql = <T>(query: string, params: unknown[] = []) => orm.em.getConnection().execute<T[]>(query, params);

const body = (type: string, data: object) =>
  JSON.stringify({ type, timestamp: '2026-11-25T00:00:00Z', data });

it('attributes events and idempotency records by their own data, and deletes what it cannot attribute', async () => {
  await orm.migrator.up({ to: BEFORE });
  await sql(`insert into app (id, name) values ('app_1', 'one')`);
  await sql(
    `insert into customer (id, app_id, email, email_lower) values
       ('cus_a', 'app_1', 'a@example.com', 'a@example.com'), ('cus_b', 'app_1', 'b@example.com', 'b@example.com')`,
  );
  await sql(`insert into organization (id, app_id, name) values ('org_1', 'app_1', 'Org')`);
  await sql(
    `insert into session (id, app_id, customer_id, token_hash, expires_at)
     values ('ses_b', 'app_1', 'cus_b', 'hash', now() + interval '1 day')`,
  );
  await sql(
    `insert into webhook_endpoint (id, app_id, url, secret_ciphertext) values ('we_1', 'app_1', 'https://x.example', 'c')`,
  );
  const events: [string, string, string, string][] = [
    [
      'msg_created',
      'customer.created',
      body('customer.created', { id: 'cus_a', email: 'a@example.com' }),
      'pending',
    ],
    ['msg_deleted', 'customer.deleted', body('customer.deleted', { id: 'cus_gone' }), 'succeeded'],
    [
      'msg_sub',
      'subscription.updated',
      body('subscription.updated', { id: 'sub_1', customerId: null, organizationId: 'org_1' }),
      'pending',
    ],
    [
      'msg_ent',
      'entitlements.updated',
      body('entitlements.updated', { customerId: 'cus_b', planName: 'Pro' }),
      'pending',
    ],
    ['msg_plan', 'plan.updated', body('plan.updated', { id: 'pro', name: 'Pro' }), 'pending'],
    [
      'msg_unknown_pending',
      'customer.updated',
      body('customer.updated', { email: 'c@example.com' }),
      'pending',
    ],
    [
      'msg_unknown_sent',
      'customer.updated',
      body('customer.updated', { email: 'd@example.com' }),
      'succeeded',
    ],
  ];
  for (const [id, type, text, status] of events) {
    await sql('insert into webhook_event (id, app_id, type, body) values (?, ?, ?, ?)', [
      id,
      'app_1',
      type,
      text,
    ]);
    await sql(`insert into webhook_delivery (id, event_id, endpoint_id, status) values (?, ?, 'we_1', ?)`, [
      `whd_${id}`,
      id,
      status,
    ]);
  }
  const record = (credential: string, key: string, ids: string[], answered: boolean) =>
    sql(
      `insert into idempotency_record (credential_id, key, app_id, fingerprint, response_status, response_body,
                                       customer_ids, created_at, expires_at)
       values (?, ?, 'app_1', 'f', ?, ?, ?::jsonb, now(), now() + interval '1 day')`,
      [credential, key, answered ? 201 : null, answered ? '{"metadata":{}}' : null, JSON.stringify(ids)],
    );
  await record('key_1', 'named', ['cus_a'], true);
  await record('key_1', 'unnamed', [], true);
  await record('key_1', 'running', [], false);
  await record('ses_b', 'own', [], true);

  await orm.migrator.up();

  expect(
    await sql<{ id: string; subject_ids: string[] }>('select id, subject_ids from webhook_event order by id'),
  ).toEqual([
    { id: 'msg_created', subject_ids: ['cus_a'] },
    { id: 'msg_deleted', subject_ids: ['cus_gone'] },
    { id: 'msg_ent', subject_ids: ['cus_b'] },
    { id: 'msg_plan', subject_ids: [] },
    { id: 'msg_sub', subject_ids: ['org_1'] },
    { id: 'msg_unknown_sent', subject_ids: [] },
  ]);
  expect(
    await sql<{ credential_id: string; key: string; customer_ids: string[] }>(
      'select credential_id, key, customer_ids from idempotency_record order by credential_id, key',
    ),
  ).toEqual([
    { credential_id: 'key_1', key: 'named', customer_ids: ['cus_a'] },
    { credential_id: 'key_1', key: 'running', customer_ids: [] },
    { credential_id: 'ses_b', key: 'own', customer_ids: ['cus_b'] },
  ]);
});
