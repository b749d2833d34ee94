import { BillingFixtures } from '../helpers/billing-fixtures.js';
import {
  type OperatorServer,
  type OperatorSession,
  operatorGraphql,
  startOperatorServer,
} from '../helpers/operators.js';

/**
 * The audit log: each audited write appends exactly one event naming its actor and target, in the
 * write's transaction; no secret reaches a row; a customer's erasure scrubs its personal values from
 * the rows about it and keeps the fact of each action. Runs on a database of its own (the dump scan
 * reads every row).
 */

const EVENTS = `query($appId: ID, $first: Int, $after: String, $actorId: ID, $action: String, $targetId: ID) {
  auditEvents(appId: $appId, first: $first, after: $after, actorId: $actorId, action: $action, targetId: $targetId) {
    edges { node { id action targetId appId actor { type id email } at ip userAgent changes } }
    pageInfo { hasNextPage endCursor }
  }
}`;

interface Node {
  id: string;
  action: string;
  targetId: string | null;
  appId: string | null;
  actor: { type: string; id: string | null; email: string | null };
  at: string;
  ip: string | null;
  userAgent: string | null;
  changes: Record<string, { before: unknown; after: unknown }>;
}

let ops: OperatorServer;
let owner: OperatorSession;
let admin: OperatorSession;

beforeAll(async () => {
  ops = await startOperatorServer();
  await ops.addOperator('audit-owner@example.com', 'owner');
  await ops.addOperator('audit-admin@example.com', 'admin');
  owner = await ops.signIn('audit-owner@example.com');
  admin = await ops.signIn('audit-admin@example.com');
});
afterAll(async () => {
  await ops.close();
});

async function events(variables: Record<string, unknown>): Promise<Node[]> {
  const res = await ops.server.graphql(EVENTS, { first: 100, ...variables }, ops.server.adminToken);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data.auditEvents.edges.map((e: { node: Node }) => e.node);
}

/** The one event of `action` on `targetId` (fails when there are none or several). */
async function theEvent(action: string, targetId: string): Promise<Node> {
  const found = await events({ action, targetId });
  expect(found.map((e) => e.action)).toEqual([action]);
  return found[0]!;
}

async function dump(): Promise<string> {
  const rows = await ops.server.deps.orm.em.fork().getConnection().execute('select * from audit_event');
  return JSON.stringify(rows);
}

describe('the audit log', () => {
  let appId: string;
  let apiKey: string;
  let keyId: string;
  let customerId: string;
  let orgId: string;
  const secrets: string[] = [];

  it('records the admin token creating an app and its first key, naming the key but not its secret', async () => {
    const created = await ops.server.graphql(
      'mutation { createApp(input: { name: "Audited", organizationsEnabled: true }) { app { id apiKeys { id } } apiKey } }',
      {},
      ops.server.adminToken,
    );
    appId = created.body.data.createApp.app.id;
    apiKey = created.body.data.createApp.apiKey;
    keyId = created.body.data.createApp.app.apiKeys[0].id;
    secrets.push(apiKey);
    const app = await theEvent('app.create', appId);
    expect(app).toMatchObject({ appId, actor: { type: 'admin_token', id: null, email: null } });
    expect(app.changes.name).toEqual({ before: null, after: 'Audited' });
    const key = await theEvent('api_key.create', keyId);
    expect(key).toMatchObject({ appId, actor: { type: 'admin_token', id: null } });
    expect(key.changes.keyHash).toEqual({ before: null, after: '[redacted]' });
  });

  it('records an operator changing settings, with the fields before and after, the IP and the user agent', async () => {
    const res = await operatorGraphql(
      ops.server,
      admin,
      'mutation($appId: ID!) { updateAppSettings(appId: $appId, input: { magicLinkExpiryMinutes: 30 }) { id } }',
      { appId },
    );
    expect(res.body.errors).toBeUndefined();
    const event = await theEvent('app.update', appId);
    expect(event.actor).toEqual({
      type: 'operator',
      id: admin.operator.id,
      email: 'audit-admin@example.com',
    });
    expect(event.changes).toEqual({ magicLinkExpiryMinutes: { before: 15, after: 30 } });
    expect(event.ip).toMatch(/127\.0\.0\.1/);
    expect(event.userAgent).toBeNull();
  });

  it('records plans, keys and their revocation by an operator', async () => {
    const plan = await operatorGraphql(
      ops.server,
      admin,
      `mutation($appId: ID!) { upsertPlan(appId: $appId, input: { id: "gold", name: "Gold", features: { seats: 3 } }) { id } }`,
      { appId },
    );
    expect(plan.body.errors).toBeUndefined();
    expect((await theEvent('plan.create', 'gold')).changes.features).toEqual({
      before: null,
      after: { seats: 3 },
    });

    const key = await operatorGraphql(
      ops.server,
      admin,
      'mutation($appId: ID!) { createApiKey(appId: $appId) { apiKey key { id } } }',
      { appId },
    );
    const newKeyId = key.body.data.createApiKey.key.id;
    secrets.push(key.body.data.createApiKey.apiKey);
    expect((await theEvent('api_key.create', newKeyId)).actor.id).toBe(admin.operator.id);
    await operatorGraphql(ops.server, admin, 'mutation($id: ID!) { revokeApiKey(id: $id) { id } }', {
      id: newKeyId,
    });
    const revoked = await theEvent('api_key.revoke', newKeyId);
    expect(revoked.changes.revokedAt?.before).toBeNull();
    expect(typeof revoked.changes.revokedAt?.after).toBe('string');
  });

  it('records a webhook endpoint with its secret redacted', async () => {
    const res = await operatorGraphql(
      ops.server,
      admin,
      'mutation($appId: ID!) { createWebhookEndpoint(input: { appId: $appId, url: "https://hooks.example.com/in" }) { endpoint { id } secret } }',
      { appId },
    );
    expect(res.body.errors).toBeUndefined();
    secrets.push(res.body.data.createWebhookEndpoint.secret);
    const event = await theEvent('webhook_endpoint.create', res.body.data.createWebhookEndpoint.endpoint.id);
    expect(event.changes.secretCiphertext).toEqual({ before: null, after: '[redacted]' });
    expect(event.changes.url).toEqual({ before: null, after: 'https://hooks.example.com/in' });
  });

  it('records an API key creating and changing a customer, and an organization', async () => {
    const created = await ops.server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .set('user-agent', 'audit-test/1.0')
      .send({ email: 'pat@example.com', name: 'Pat' })
      .expect(201);
    customerId = created.body.id;
    const create = await theEvent('customer.create', customerId);
    expect(create).toMatchObject({
      appId,
      actor: { type: 'api_key', id: keyId, email: null },
      userAgent: 'audit-test/1.0',
    });
    expect(create.changes.email).toEqual({ before: null, after: 'pat@example.com' });

    await ops.server.http
      .patch(`/v1/customers/${customerId}`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({ name: 'Patricia' })
      .expect(200);
    const update = await theEvent('customer.update', customerId);
    expect(update.changes).toEqual({ name: { before: 'Pat', after: 'Patricia' } });

    // Owned by another customer: the last owner of an organization cannot be erased.
    const founder = await ops.server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'founder@example.com' })
      .expect(201);
    const org = await ops.server.graphql(
      'mutation($owner: ID!) { createOrganization(input: { name: "Acme", ownerCustomerId: $owner }) { id } }',
      { owner: founder.body.id },
      apiKey,
    );
    expect(org.body.errors).toBeUndefined();
    orgId = org.body.data.createOrganization.id;
    const orgEvent = await theEvent('organization.create', orgId);
    expect(orgEvent.actor).toEqual({ type: 'api_key', id: keyId, email: null });
  });

  it('records an organization member added, re-roled and removed, naming the member as subject', async () => {
    const member = await ops.server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'member@example.com' })
      .expect(201);
    const args = { customerId: member.body.id, organizationId: orgId };
    const added = await ops.server.graphql(
      'mutation($customerId: ID!, $organizationId: ID!) { addOrganizationMember(customerId: $customerId, organizationId: $organizationId) { role } }',
      args,
      apiKey,
    );
    expect(added.body.errors).toBeUndefined();
    const [create] = (await events({ action: 'organization_member.create' })).filter(
      (e) => e.changes.customer?.after === member.body.id,
    );
    expect(create).toMatchObject({ appId, actor: { type: 'api_key', id: keyId } });
    const memberId = create!.targetId!;
    await ops.server.graphql(
      'mutation($customerId: ID!, $organizationId: ID!) { updateOrganizationMemberRole(customerId: $customerId, organizationId: $organizationId, role: admin) { role } }',
      args,
      apiKey,
    );
    expect((await theEvent('organization_member.update', memberId)).changes).toEqual({
      role: { before: 'member', after: 'admin' },
    });
    const removed = await ops.server.graphql(
      'mutation($customerId: ID!, $organizationId: ID!) { removeOrganizationMember(customerId: $customerId, organizationId: $organizationId) }',
      args,
      apiKey,
    );
    expect(removed.body.data.removeOrganizationMember).toBe(true);
    expect((await theEvent('organization_member.delete', memberId)).changes.role).toEqual({
      before: 'admin',
      after: null,
    });
  });

  it('records grants made and voided, but not the usage they pay for', async () => {
    await operatorGraphql(
      ops.server,
      admin,
      `mutation($appId: ID!) { upsertPlan(appId: $appId, input: { id: "metered", name: "Metered", isDefault: true, features: { calls: { limit: 3, reset: "never" } } }) { id } }`,
      { appId },
    );
    const customer = await ops.server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'metered@example.com' })
      .expect(201);
    const grant = await ops.server.http
      .post('/v1/credit-grants')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId: customer.body.id, feature: 'calls', amount: 2 })
      .expect(201);
    const created = await theEvent('grant.create', grant.body.id);
    expect(created).toMatchObject({ appId, actor: { type: 'api_key', id: keyId } });
    expect(created.changes.amount).toEqual({ before: null, after: 2 });
    const used = await ops.server.http
      .post('/v1/usage')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId: customer.body.id, feature: 'calls', amount: 4 });
    expect(used.body.balance.remaining).toBe(1);
    await ops.server.http
      .post(`/v1/credit-grants/${grant.body.id}/void`)
      .set('authorization', `Bearer ${apiKey}`)
      .expect(200);
    const voided = await theEvent('grant.void', grant.body.id);
    expect(voided.changes.voidedAt?.before).toBeNull();
    // The consumption moved the grant's `spent`: no event says so (usage is a ledger of its own).
    expect((await events({ targetId: grant.body.id })).map((e) => e.action)).toEqual([
      'grant.void',
      'grant.create',
    ]);
  });

  it('records an API key canceling a subscription', async () => {
    const fx = new BillingFixtures(ops.server, appId);
    const plan = await fx.plan({ slug: 'paid' });
    const owner = await fx.customer();
    const subscription = await fx.subscription(
      { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId! },
      plan,
    );
    const canceled = await ops.server.http
      .post(`/v1/subscriptions/${subscription.id}/cancel`)
      .set('authorization', `Bearer ${apiKey}`)
      .send({});
    expect([canceled.status, canceled.body.status]).toEqual([200, 'canceled']);
    const event = await theEvent('subscription.update', subscription.id);
    expect(event).toMatchObject({ appId, actor: { type: 'api_key', id: keyId } });
    expect(event.changes.status).toEqual({ before: 'active', after: 'canceled' });
  });

  it('records operators managed by an owner, outside any app', async () => {
    const added = await operatorGraphql(
      ops.server,
      owner,
      'mutation { addOperator(email: "new-viewer@example.com", role: "viewer") { id } }',
    );
    const event = await theEvent('operator.create', added.body.data.addOperator.id);
    expect(event).toMatchObject({
      appId: null,
      actor: { type: 'operator', id: owner.operator.id, email: 'audit-owner@example.com' },
    });
    expect(event.changes.role).toEqual({ before: null, after: 'viewer' });
  });

  it('filters by actor and pages with a cursor, newest first', async () => {
    const byKey = await events({ actorId: keyId });
    expect(new Set(byKey.map((e) => e.actor.id))).toEqual(new Set([keyId]));
    expect(byKey.length).toBeGreaterThanOrEqual(3);
    const first = await ops.server.graphql(EVENTS, { first: 2 }, ops.server.adminToken);
    const page = first.body.data.auditEvents;
    expect(page.edges).toHaveLength(2);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const next = await ops.server.graphql(
      EVENTS,
      { first: 2, after: page.pageInfo.endCursor },
      ops.server.adminToken,
    );
    const all = await events({});
    expect(next.body.data.auditEvents.edges.map((e: { node: Node }) => e.node.id)).toEqual(
      all.slice(2, 4).map((e) => e.id),
    );
  });

  it('lets a viewer read the log, and keeps customers’ own sessions out of it', async () => {
    await ops.addOperator('audit-viewer@example.com', 'viewer');
    const viewer = await ops.signIn('audit-viewer@example.com');
    const res = await operatorGraphql(ops.server, viewer, EVENTS, { first: 1 });
    expect(res.body.data.auditEvents.edges).toHaveLength(1);
    const anonymous = await ops.server.graphql(EVENTS, { first: 1 });
    expect(anonymous.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const byKey = await ops.server.graphql(EVENTS, { first: 1 }, apiKey);
    expect(byKey.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('stores no secret in any row', async () => {
    const rows = await dump();
    expect(secrets.length).toBe(3);
    for (const secret of secrets) expect(rows).not.toContain(secret);
    // A key's display prefix (`tg_sk_` and 6 characters, shown in every key list) is not its secret.
    expect(rows).not.toMatch(/tg_sk_[A-Za-z0-9_-]{7,}|whsec_|tg_os_|tg_ol_/);
    expect(rows).not.toMatch(/"keyHash":\{"after":"[0-9a-f]{64}"/);
  });

  it('scrubs an erased customer’s personal values and keeps the fact of each action', async () => {
    await ops.server.http
      .delete(`/v1/customers/${customerId}`)
      .set('authorization', `Bearer ${apiKey}`)
      .expect(200);
    const about = await events({ targetId: customerId });
    expect(about.map((e) => e.action)).toEqual(['customer.delete', 'customer.update', 'customer.create']);
    expect(about[0]!.actor).toEqual({ type: 'api_key', id: keyId, email: null });
    expect(about[1]!.changes).toEqual({ name: { before: '[erased]', after: '[erased]' } });
    expect(about[2]!.changes.email).toEqual({ before: null, after: '[erased]' });
    const rows = await dump();
    expect(rows).not.toContain('pat@example.com');
    expect(rows).not.toContain('Patricia');
  });

  it('deletes events older than AUDIT_RETENTION_DAYS and keeps the rest', async () => {
    const em = ops.server.deps.orm.em.fork();
    await em
      .getConnection()
      .execute(
        `insert into audit_event (id, at, action, actor_type) values ('aud_old', now() - interval '366 days', 'app.update', 'admin_token')`,
      );
    const before = (await events({})).map((e) => e.id);
    expect(before).toContain('aud_old');
    const purged = await ops.server.services.audit.purge();
    expect(purged).toBe(1);
    const left = await em
      .getConnection()
      .execute(`select count(*)::int as n from audit_event where id = 'aud_old'`);
    expect(left[0].n).toBe(0);
    expect((await events({})).map((e) => e.id)).toEqual(before.filter((id) => id !== 'aud_old'));
  });
});
