import { withContext } from '../../src/db.js';
import { tokenFromDevMailbox, uniqueEmail } from '../helpers/auth-fixtures.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { verify as verifySignature, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Seats of organizations: a plan's seat limit, members and pending invitations counted together under
 * the organization's lock, and invitations whose e-mailed link signs the invitee in as a member. Two
 * instances on one database, so the races are between processes, not only within one.
 */
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  [a, b] = await Promise.all([startTestServer(), startTestServer()]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const CALLBACK = 'https://app.example.com/callback';

async function sql<T = unknown>(text: string, params: unknown[] = []): Promise<T[]> {
  return withContext(a.deps.orm, () => a.deps.orm.em.getConnection().execute<T[]>(text, params));
}

async function newApp(settings: Record<string, unknown> = {}) {
  const { appId, apiKey } = await a.createApp({
    organizationsEnabled: true,
    allowedCallbackUrls: 'https://app.example.com/*',
    ...settings,
  });
  return { appId, apiKey, fx: new Fixtures(a, appId) };
}

const UPSERT_PLAN = `mutation($appId: ID!, $input: PlanInput!) {
  upsertPlan(appId: $appId, input: $input) { id seats { mode included min max } }
}`;

/** The app's default plan (every organization without a subscription is on it) with these seats. */
async function defaultPlan(appId: string, seats: Record<string, unknown> | null, features = {}) {
  const res = await a.graphql(
    UPSERT_PLAN,
    { appId, input: { id: 'team', name: 'Team', isDefault: true, features, seats } },
    a.adminToken,
  );
  return res;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function invite(server: TestServer, token: string, orgId: string, body: Record<string, unknown>) {
  return server.http.post(`/v1/organizations/${orgId}/invitations`).set(bearer(token)).send(body);
}

function seats(token: string, orgId: string) {
  return a.http.get(`/v1/organizations/${orgId}/seats`).set(bearer(token));
}

const ADD = `mutation($org: ID!, $customer: ID!) {
  addOrganizationMember(organizationId: $org, customerId: $customer) { customerId role }
}`;

async function memberIds(orgId: string): Promise<string[]> {
  const rows = await sql<{ customer_id: string }>(
    'select customer_id from organization_member where organization_id = ? order by customer_id',
    [orgId],
  );
  return rows.map((r) => r.customer_id);
}

function verify(server: TestServer, appId: string, token: string) {
  return server.http.post(`/v1/apps/${appId}/auth/verify`).send({ token });
}

describe('plan seats', () => {
  it('are set on a plan in either mode and shown back', async () => {
    const { appId } = await newApp();
    const limit = await defaultPlan(appId, { mode: 'limit', included: 25 });
    expect(limit.body).toEqual({
      data: { upsertPlan: { id: 'team', seats: { mode: 'limit', included: 25, min: null, max: null } } },
    });
    const perSeat = await defaultPlan(appId, { mode: 'per_seat', min: 1, max: 500 });
    expect(perSeat.body.data.upsertPlan.seats).toEqual({
      mode: 'per_seat',
      included: null,
      min: 1,
      max: 500,
    });
    const cleared = await defaultPlan(appId, null);
    expect(cleared.body.data.upsertPlan.seats).toBeNull();
  });

  it('refuse a plan with both seats and a feature named seats (400)', async () => {
    const { appId } = await newApp();
    const res = await defaultPlan(appId, { mode: 'limit', included: 5 }, { seats: 10 });
    expect(res.body.data).toBeNull();
    expect(res.body.errors?.[0].message).toBe(
      'seats: a plan with seats cannot also have a feature named seats',
    );
    expect(res.body.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', statusCode: 400 });
    expect(await sql('select 1 from plan where app_id = ?', [appId])).toEqual([]);
  });

  it('answer check/seats with the seat limit, null for per-seat without max', async () => {
    const { appId, apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    await defaultPlan(appId, { mode: 'limit', included: 25 });
    const check = () =>
      a.http.get('/v1/entitlements/check/seats').query({ organizationId: orgId }).set(bearer(apiKey));
    expect((await check()).body).toEqual({ feature: 'seats', allowed: true, value: 25 });
    await defaultPlan(appId, { mode: 'per_seat', min: 1 });
    await eventually(async () => ((await check()).body.value === null ? true : undefined));
    expect((await check()).body).toEqual({ feature: 'seats', allowed: true, value: null });
  });
});

describe('seat limits', () => {
  it('count members and pending invitations, and refuse a member beyond the limit with 409', async () => {
    const { appId, apiKey, fx } = await newApp();
    await defaultPlan(appId, { mode: 'limit', included: 3 });
    const [owner, second, third] = [await fx.customer(), await fx.customer(), await fx.customer()];
    const orgId = await fx.organization({ [owner]: 'owner', [second]: 'member' });
    const invited = await invite(a, apiKey, orgId, { email: uniqueEmail(), redirectUrl: CALLBACK });
    expect(invited.status).toBe(201);
    expect((await seats(apiKey, orgId)).body).toEqual({
      used: 3,
      members: 2,
      pending: 1,
      limit: 3,
      quantity: null,
      overLimit: false,
    });
    const refused = await a.graphql(ADD, { org: orgId, customer: third }, apiKey);
    expect(refused.body.errors?.[0].message).toBe('seat limit reached: 3 of 3 seats used');
    expect(refused.body.errors?.[0].extensions).toMatchObject({ code: 'CONFLICT', statusCode: 409 });
    const more = await invite(a, apiKey, orgId, { email: uniqueEmail(), redirectUrl: CALLBACK });
    expect(more.status).toBe(409);
    expect(more.body).toEqual({
      statusCode: 409,
      message: 'seat limit reached: 3 of 3 seats used',
      error: 'Conflict',
    });
    expect(await memberIds(orgId)).toEqual([owner, second].sort());
    expect(await sql('select id from organization_invitation where organization_id = ?', [orgId])).toEqual([
      { id: invited.body.id },
    ]);
  });

  it('free the seat of an expired or revoked invitation', async () => {
    const { appId, apiKey, fx } = await newApp();
    await defaultPlan(appId, { mode: 'limit', included: 2 });
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const first = await invite(a, apiKey, orgId, { email: uniqueEmail(), redirectUrl: CALLBACK });
    expect((await seats(apiKey, orgId)).body).toMatchObject({ used: 2, pending: 1 });
    await sql("update organization_invitation set expires_at = now() - interval '1 second' where id = ?", [
      first.body.id,
    ]);
    expect((await seats(apiKey, orgId)).body).toMatchObject({ used: 1, pending: 0 });
    const second = await invite(a, apiKey, orgId, { email: uniqueEmail(), redirectUrl: CALLBACK });
    expect(second.status).toBe(201);
    const revoked = await a.http
      .delete(`/v1/organizations/${orgId}/invitations/${second.body.id}`)
      .set(bearer(apiKey));
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ ...second.body, status: 'revoked' });
    expect((await seats(apiKey, orgId)).body).toMatchObject({ used: 1, pending: 0 });
    const list = await a.http.get(`/v1/organizations/${orgId}/invitations`).set(bearer(apiKey));
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: [
        { ...second.body, status: 'revoked' },
        // Its expiry was moved into the past above.
        { ...first.body, status: 'expired', expiresAt: expect.any(String) },
      ],
    });
  });

  it('allow lowering the limit below the seats used: overLimit, and new members are refused', async () => {
    const { appId, apiKey, fx } = await newApp();
    await defaultPlan(appId, { mode: 'limit', included: 5 });
    const [owner, m1, m2, newcomer] = [
      await fx.customer(),
      await fx.customer(),
      await fx.customer(),
      await fx.customer(),
    ];
    const orgId = await fx.organization({ [owner]: 'owner', [m1]: 'member', [m2]: 'member' });
    const lowered = await defaultPlan(appId, { mode: 'limit', included: 2 });
    expect(lowered.body.errors).toBeUndefined();
    const answer = await eventually(async () => {
      const res = await seats(apiKey, orgId);
      return res.body.limit === 2 ? res.body : undefined;
    });
    expect(answer).toEqual({ used: 3, members: 3, pending: 0, limit: 2, quantity: null, overLimit: true });
    const refused = await a.graphql(ADD, { org: orgId, customer: newcomer }, apiKey);
    expect(refused.body.errors?.[0].message).toBe('seat limit reached: 3 of 2 seats used');
  });

  it('hold under races across two instances: 10 adds and accepts with one seat left, exactly one succeeds', async () => {
    const { appId, apiKey, fx } = await newApp();
    await defaultPlan(appId, { mode: 'limit', included: 10 });
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const emails = [uniqueEmail(), uniqueEmail(), uniqueEmail(), uniqueEmail()];
    for (const email of emails) {
      expect((await invite(a, apiKey, orgId, { email, redirectUrl: CALLBACK })).status).toBe(201);
    }
    const tokens = await Promise.all(emails.map((email) => tokenFromDevMailbox(a, email)));
    const customers = await Promise.all(Array.from({ length: 6 }, () => fx.customer()));
    // One seat left for members: the owner and room for one more.
    await defaultPlan(appId, { mode: 'limit', included: 2 });
    await eventually(async () => ((await seats(apiKey, orgId)).body.limit === 2 ? true : undefined));

    const attempts = [
      ...tokens.map((token, i) => async () => (await verify(i % 2 ? a : b, appId, token)).status),
      ...customers.map((customer, i) => async () => {
        const res = await (i % 2 ? b : a).graphql(ADD, { org: orgId, customer }, apiKey);
        return res.body.errors ? res.body.errors?.[0].extensions.statusCode : 200;
      }),
    ];
    const statuses = await Promise.all(attempts.map((attempt) => attempt()));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    expect(await memberIds(orgId)).toHaveLength(2);
  });

  it('hold under races of one add per instance with one seat left', async () => {
    const { appId, apiKey, fx } = await newApp();
    await defaultPlan(appId, { mode: 'limit', included: 2 });
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const customers = await Promise.all(Array.from({ length: 10 }, () => fx.customer()));
    const statuses = await Promise.all(
      customers.map(async (customer, i) => {
        const res = await (i % 2 ? b : a).graphql(ADD, { org: orgId, customer }, apiKey);
        return res.body.errors ? res.body.errors?.[0].extensions.statusCode : 200;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    expect(await memberIds(orgId)).toHaveLength(2);
  });
});

describe('invitations', () => {
  it('are created with 201 and e-mailed with a link that follows the login rules', async () => {
    const { appId, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const email = uniqueEmail('invitee');
    const res = await invite(a, await fx.session(owner), orgId, {
      email,
      role: 'admin',
      redirectUrl: CALLBACK,
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^inv_[a-z2-7]{32}$/),
      email,
      role: 'admin',
      status: 'pending',
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
    });
    const lifetime = Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt);
    expect(lifetime).toBe(168 * 3_600_000);
    const mail = await eventually(async () => {
      const box = await a.http.get('/dev/mailbox.json');
      return (box.body.messages as { to: string; subject: string; text: string }[]).find(
        (m) => m.to === email,
      );
    });
    expect(mail.subject).toBe(`You are invited to join Acme on ${await appName(appId)}`);
    const link = new URL(/https?:\/\/\S+/.exec(mail.text)![0]);
    expect(link.pathname).toBe(`/v1/apps/${appId}/auth/verify`);
    expect(link.searchParams.get('redirect')).toBe('true');
    expect(link.searchParams.get('token')).toMatch(/^tg_inv_/);
    // Only the hash of the token is stored.
    const [row] = await sql<{ token_hash: string }>(
      'select token_hash from organization_invitation where id = ?',
      [res.body.id],
    );
    expect(row!.token_hash).not.toContain(link.searchParams.get('token'));
  });

  it('refuse a redirect URL outside the callback patterns with 400 and send nothing', async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const email = uniqueEmail();
    const res = await invite(a, apiKey, orgId, { email, redirectUrl: 'https://evil.example.net/' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      statusCode: 400,
      message: 'redirectUrl: does not match any allowed callback URL of this app',
      error: 'Bad Request',
    });
    expect(await sql('select 1 from organization_invitation where organization_id = ?', [orgId])).toEqual([]);
    const box = await a.http.get('/dev/mailbox.json');
    expect((box.body.messages as { to: string }[]).filter((m) => m.to === email)).toEqual([]);
  });

  it('follow the roles: an admin cannot invite an owner, a member cannot invite, another app gets 404', async () => {
    const { fx } = await newApp();
    const [owner, admin, member] = [await fx.customer(), await fx.customer(), await fx.customer()];
    const orgId = await fx.organization({ [owner]: 'owner', [admin]: 'admin', [member]: 'member' });
    const asAdmin = await invite(a, await fx.session(admin), orgId, {
      email: uniqueEmail(),
      role: 'owner',
      redirectUrl: CALLBACK,
    });
    expect(asAdmin.status).toBe(403);
    expect(asAdmin.body.message).toBe('Only an owner can invite an owner');
    const adminInvitesMember = await invite(a, await fx.session(admin), orgId, {
      email: uniqueEmail(),
      redirectUrl: CALLBACK,
    });
    expect(adminInvitesMember.status).toBe(201);
    const asMember = await invite(a, await fx.session(member), orgId, {
      email: uniqueEmail(),
      redirectUrl: CALLBACK,
    });
    expect(asMember.status).toBe(403);
    expect(asMember.body.message).toBe('Only owners and admins can manage members');
    const other = await newApp();
    const foreign = await invite(a, other.apiKey, orgId, { email: uniqueEmail(), redirectUrl: CALLBACK });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({
      statusCode: 404,
      message: `Organization ${orgId} not found`,
      error: 'Not Found',
    });
    const foreignList = await a.http.get(`/v1/organizations/${orgId}/invitations`).set(bearer(other.apiKey));
    expect(foreignList.status).toBe(404);
    const foreignSeats = await seats(other.apiKey, orgId);
    expect(foreignSeats.status).toBe(404);
  });

  it('are limited to 30 a minute per caller through GraphQL (RATE_LIMITED)', async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const INVITE = `mutation($org: ID!, $email: String!) {
      inviteToOrganization(organizationId: $org, input: {email: $email, redirectUrl: "${CALLBACK}"}) { status }
    }`;
    for (let i = 0; i < 30; i++) {
      const res = await a.graphql(INVITE, { org: orgId, email: uniqueEmail() }, apiKey);
      expect(res.body).toEqual({ data: { inviteToOrganization: { status: 'pending' } } });
    }
    const refused = await a.graphql(INVITE, { org: orgId, email: uniqueEmail() }, apiKey);
    expect(refused.body.data).toBeNull();
    expect(refused.body.errors?.[0].extensions).toMatchObject({ code: 'RATE_LIMITED', statusCode: 429 });
    expect(
      await sql('select 1 from organization_invitation where organization_id = ?', [orgId]),
    ).toHaveLength(30);
  });

  it('are limited to 100 per organization in 24 hours (429)', async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    await sql(
      `insert into organization_invitation (id, app_id, organization_id, email, email_lower, role, token_hash,
         redirect_url, state, expires_at)
       select 'inv_seed' || g || ?, o.app_id, o.id, 'x@example.com', 'x@example.com', 'member',
              md5(random()::text) || g, 'https://app.example.com/callback', 'revoked', now() + interval '1 day'
         from organization o, generate_series(1, 100) g where o.id = ?`,
      [orgId, orgId],
    );
    const res = await invite(a, apiKey, orgId, { email: uniqueEmail(), redirectUrl: CALLBACK });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({
      statusCode: 429,
      message: 'At most 100 invitations per organization in 24 hours, try again later',
      error: 'Too Many Requests',
    });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(86_000);
  });

  it('are accepted by verifying the token: a new customer (even without autoCreateCustomer), a member, a session in the organization', async () => {
    const { appId, apiKey, fx } = await newApp({ autoCreateCustomer: false });
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const email = uniqueEmail('newcomer');
    const created = await invite(a, apiKey, orgId, { email, role: 'admin', redirectUrl: CALLBACK });
    const token = await tokenFromDevMailbox(a, email);

    // Opening the link redirects with the token and does not use it up.
    const opened = await a.http.get(`/v1/apps/${appId}/auth/verify`).query({ token, redirect: 'true' });
    expect(opened.status).toBe(302);
    expect(opened.headers.location).toBe(`${CALLBACK}?token=${token}`);

    const res = await verify(b, appId, token);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['customer', 'entitlements', 'sessionToken']);
    expect(res.body.customer).toMatchObject({ email });
    const customerId = res.body.customer.id as string;
    expect(await memberIds(orgId)).toEqual([owner, customerId].sort());
    const session = await a.http.get(`/v1/apps/${appId}/auth/session`).set(bearer(res.body.sessionToken));
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      organizationId: orgId,
      orgRole: 'admin',
      customer: { id: customerId },
    });

    const again = await verify(a, appId, token);
    expect(again.status).toBe(401);
    expect(again.body.message).toBe('Invalid, used or expired magic link token');
    expect(await memberIds(orgId)).toHaveLength(2);
    const list = await a.http.get(`/v1/organizations/${orgId}/invitations`).set(bearer(apiKey));
    expect(list.body).toEqual({ data: [{ ...created.body, status: 'accepted' }] });
    expect((await seats(apiKey, orgId)).body).toMatchObject({ used: 2, members: 2, pending: 0 });
  });

  it('give one membership for 10 parallel verifies of one invitation over two instances', async () => {
    const { appId, apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const email = uniqueEmail();
    await invite(a, apiKey, orgId, { email, redirectUrl: CALLBACK });
    const token = await tokenFromDevMailbox(a, email);
    const statuses = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => (await verify(i % 2 ? a : b, appId, token)).status),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(9);
    expect(await memberIds(orgId)).toHaveLength(2);
  });

  it('stop working when revoked (401) and cannot be revoked twice (409)', async () => {
    const { appId, apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const orgId = await fx.organization({ [owner]: 'owner' });
    const email = uniqueEmail();
    const created = await invite(a, apiKey, orgId, { email, redirectUrl: CALLBACK });
    const token = await tokenFromDevMailbox(a, email);
    const path = `/v1/organizations/${orgId}/invitations/${created.body.id}`;
    expect((await a.http.delete(path).set(bearer(apiKey))).status).toBe(200);
    expect((await verify(a, appId, token)).status).toBe(401);
    const twice = await a.http.delete(path).set(bearer(apiKey));
    expect(twice.status).toBe(409);
    expect(twice.body.message).toBe('Only a pending invitation can be revoked; this one is not');
    expect(await memberIds(orgId)).toEqual([owner]);
  });

  it("go with the invitee's erasure", async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const invitee = uniqueEmail();
    const inviteeId = await fx.customer(invitee);
    const orgId = await fx.organization({ [owner]: 'owner' });
    const stranger = uniqueEmail();
    await invite(a, apiKey, orgId, { email: invitee, redirectUrl: CALLBACK });
    await invite(a, apiKey, orgId, { email: stranger, redirectUrl: CALLBACK });
    const [row] = await sql<{ customer_id: string }>(
      'select customer_id from organization_invitation where email = ?',
      [invitee],
    );
    expect(row!.customer_id).toBe(inviteeId);
    expect((await a.http.delete(`/v1/customers/${inviteeId}`).set(bearer(apiKey))).status).toBe(200);
    expect(await sql('select email from organization_invitation where organization_id = ?', [orgId])).toEqual(
      [{ email: stranger }],
    );
  });
});

describe('organization events', () => {
  it('announce invitation_created, member_added (also on accept) and member_removed', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const { appId, apiKey, fx } = await newApp();
      const endpoint = await a.http
        .post('/v1/webhook-endpoints')
        .set(bearer(apiKey))
        .send({ url: `${receiver.url}/org` });
      expect(endpoint.status).toBe(201);
      const secret = endpoint.body.secret as string;
      const [owner, joiner] = [await fx.customer(), await fx.customer()];
      const orgId = await fx.organization({ [owner]: 'owner' });
      const arrived = async (type: string, match: (data: any) => boolean) => {
        const found = await eventually(
          () => receiver.received.find((r) => r.payload.type === type && match(r.payload.data)),
          { what: `a ${type} event`, timeoutMs: 20_000 },
        );
        expect(verifySignature(secret, found)).toEqual(found.payload);
        return found.payload.data;
      };

      expect((await a.graphql(ADD, { org: orgId, customer: joiner }, apiKey)).body.errors).toBeUndefined();
      expect(await arrived('organization.member_added', (d) => d.customerId === joiner)).toEqual({
        organizationId: orgId,
        customerId: joiner,
        role: 'member',
      });
      const removed = await a.graphql(
        'mutation($org: ID!, $c: ID!) { removeOrganizationMember(organizationId: $org, customerId: $c) }',
        { org: orgId, c: joiner },
        apiKey,
      );
      expect(removed.body).toEqual({ data: { removeOrganizationMember: true } });
      expect(await arrived('organization.member_removed', (d) => d.customerId === joiner)).toEqual({
        organizationId: orgId,
        customerId: joiner,
        role: 'member',
      });

      const email = uniqueEmail();
      const invited = await invite(a, apiKey, orgId, { email, redirectUrl: CALLBACK });
      expect(await arrived('organization.invitation_created', (d) => d.id === invited.body.id)).toEqual({
        organizationId: orgId,
        ...invited.body,
      });
      const accepted = await verify(a, appId, await tokenFromDevMailbox(a, email));
      expect(accepted.status).toBe(200);
      expect(
        await arrived('organization.member_added', (d) => d.customerId === accepted.body.customer.id),
      ).toEqual({ organizationId: orgId, customerId: accepted.body.customer.id, role: 'member' });
    } finally {
      await receiver.close();
    }
  });
});

async function appName(appId: string): Promise<string> {
  const [row] = await sql<{ name: string }>('select name from app where id = ?', [appId]);
  return row!.name;
}
