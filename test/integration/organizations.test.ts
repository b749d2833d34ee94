import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

async function newApp(settings: Record<string, unknown> = { organizationsEnabled: true }) {
  const { appId, apiKey } = await server.createApp(settings);
  return { appId, apiKey, fx: new Fixtures(server, appId) };
}

const CREATE = `mutation($input: CreateOrganizationInput!) {
  createOrganization(input: $input) { id name metadata members { customerId email role } }
}`;
const GET = `query($id: ID!) { organization(id: $id) { id name members { customerId role } } }`;
const LIST = `query($customerId: ID) { organizations(customerId: $customerId) { id name } }`;
const ADD = `mutation($org: ID!, $customer: ID!, $role: OrgRole) {
  addOrganizationMember(organizationId: $org, customerId: $customer, role: $role) { customerId role }
}`;
const UPDATE = `mutation($org: ID!, $customer: ID!, $role: OrgRole!) {
  updateOrganizationMemberRole(organizationId: $org, customerId: $customer, role: $role) { customerId role }
}`;
const REMOVE = `mutation($org: ID!, $customer: ID!) {
  removeOrganizationMember(organizationId: $org, customerId: $customer)
}`;
const SWITCH = `mutation($org: ID!) {
  switchOrganization(organizationId: $org) { sessionToken organizationId orgRole entitlements { planName features } }
}`;

function errorOf(body: { errors?: any[] }) {
  const e = body.errors?.[0];
  return e && { message: e.message, code: e.extensions.code, statusCode: e.extensions.statusCode };
}

describe('organizations', () => {
  it('are refused with 403 when the app has organizations disabled', async () => {
    const { apiKey, fx } = await newApp({ organizationsEnabled: false });
    const owner = await fx.customer();
    const res = await server.graphql(CREATE, { input: { name: 'Acme', ownerCustomerId: owner } }, apiKey);
    expect(res.body.data).toBeNull();
    expect(errorOf(res.body)).toEqual({
      message: 'Organizations are not enabled for this app',
      code: 'FORBIDDEN',
      statusCode: 403,
    });
    const token = await fx.session(owner);
    const list = await server.graphql(LIST, {}, token);
    expect(errorOf(list.body).statusCode).toBe(403);
  });

  it('are created by an API key for an owner customer', async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer('owner@example.com');
    const res = await server.graphql(
      CREATE,
      { input: { name: 'Acme', metadata: { plan: 'b2b' }, ownerCustomerId: owner } },
      apiKey,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createOrganization).toEqual({
      id: expect.stringMatching(/^org_[a-z2-7]{32}$/),
      name: 'Acme',
      metadata: { plan: 'b2b' },
      members: [{ customerId: owner, email: 'owner@example.com', role: 'owner' }],
    });
  });

  it("take metadata by the customers' rule: keys of 1 to 40 code points, 50 keys, 16 KiB as JSON", async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const create = (metadata: Record<string, unknown>) =>
      server.graphql(CREATE, { input: { name: 'Acme', metadata, ownerCustomerId: owner } }, apiKey);
    // 40 emoji are 80 UTF-16 units: characters are counted as code points, as for customers.
    const emojiKey = { ['😀'.repeat(40)]: 1 };
    const accepted = await create(emojiKey);
    expect(accepted.body.errors).toBeUndefined();
    expect(accepted.body.data.createOrganization.metadata).toEqual(emojiKey);
    const refusals: [Record<string, unknown>, string][] = [
      [{ ['😀'.repeat(41)]: 1 }, 'metadata: keys must be 1 to 40 characters (got one of 41)'],
      [{ '': 1 }, 'metadata: keys must be 1 to 40 characters (got one of 0)'],
      [
        Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
        'metadata: must have at most 50 keys (would have 51)',
      ],
      [
        { blob: 'x'.repeat(16 * 1024 - 10) },
        'metadata: must be at most 16384 bytes as JSON (would be 16385)',
      ],
    ];
    for (const [metadata, message] of refusals) {
      expect(errorOf((await create(metadata)).body)).toEqual({
        message,
        code: 'BAD_USER_INPUT',
        statusCode: 400,
      });
    }
  });

  it('need ownerCustomerId with an API key, and a customer of the same app', async () => {
    const { apiKey } = await newApp();
    const other = await newApp();
    const missing = await server.graphql(CREATE, { input: { name: 'Acme' } }, apiKey);
    expect(errorOf(missing.body)).toEqual({
      message: 'ownerCustomerId: is required with an API key',
      code: 'BAD_USER_INPUT',
      statusCode: 400,
    });
    const foreign = await other.fx.customer();
    const res = await server.graphql(CREATE, { input: { name: 'Acme', ownerCustomerId: foreign } }, apiKey);
    expect(errorOf(res.body)).toEqual({
      message: `Customer ${foreign} not found`,
      code: 'NOT_FOUND',
      statusCode: 404,
    });
  });

  it('are created by a session with its customer as owner', async () => {
    const { fx } = await newApp();
    const me = await fx.customer();
    const token = await fx.session(me);
    const res = await server.graphql(CREATE, { input: { name: 'Mine' } }, token);
    expect(res.body.data.createOrganization.members).toEqual([
      { customerId: me, email: expect.any(String), role: 'owner' },
    ]);
    const other = await fx.customer();
    const refused = await server.graphql(CREATE, { input: { name: 'X', ownerCustomerId: other } }, token);
    expect(errorOf(refused.body).statusCode).toBe(400);
  });

  it('are visible to the app and to their members only; another app sees null', async () => {
    const { apiKey, fx } = await newApp();
    const member = await fx.customer();
    const outsider = await fx.customer();
    const orgId = await fx.organization({ [member]: 'owner' });
    expect((await server.graphql(GET, { id: orgId }, apiKey)).body.data.organization).toEqual({
      id: orgId,
      name: 'Acme',
      members: [{ customerId: member, role: 'owner' }],
    });
    const asMember = await server.graphql(GET, { id: orgId }, await fx.session(member));
    expect(asMember.body.data.organization.id).toBe(orgId);
    const asOutsider = await server.graphql(GET, { id: orgId }, await fx.session(outsider));
    expect(asOutsider.body).toEqual({ data: { organization: null } });
    const otherApp = await newApp();
    expect((await server.graphql(GET, { id: orgId }, otherApp.apiKey)).body).toEqual({
      data: { organization: null },
    });
  });

  it("list a customer's organizations: by customerId with an API key, its own with a session", async () => {
    const { apiKey, fx } = await newApp();
    const me = await fx.customer();
    const someoneElse = await fx.customer();
    const first = await fx.organization({ [me]: 'owner' });
    const second = await fx.organization({ [me]: 'member', [someoneElse]: 'owner' });
    await fx.organization({ [someoneElse]: 'owner' });
    const byKey = await server.graphql(LIST, { customerId: me }, apiKey);
    expect(byKey.body.data.organizations.map((o: { id: string }) => o.id)).toEqual([first, second]);
    const bySession = await server.graphql(LIST, {}, await fx.session(me));
    expect(bySession.body.data.organizations.map((o: { id: string }) => o.id)).toEqual([first, second]);
    const noCustomer = await server.graphql(LIST, {}, apiKey);
    expect(errorOf(noCustomer.body).statusCode).toBe(400);
  });
});

describe('organization members', () => {
  it('are managed by owners and admins, not by members', async () => {
    const { fx } = await newApp();
    const [owner, admin, member, newcomer, another] = await Promise.all([
      fx.customer(),
      fx.customer(),
      fx.customer(),
      fx.customer(),
      fx.customer(),
    ]);
    const org = await fx.organization({ [owner]: 'owner', [admin]: 'admin', [member]: 'member' });
    const asMember = await server.graphql(ADD, { org, customer: newcomer }, await fx.session(member));
    expect(errorOf(asMember.body)).toEqual({
      message: 'Only owners and admins can manage members',
      code: 'FORBIDDEN',
      statusCode: 403,
    });
    const asAdmin = await server.graphql(ADD, { org, customer: newcomer }, await fx.session(admin));
    expect(asAdmin.body.data.addOrganizationMember).toEqual({ customerId: newcomer, role: 'member' });
    const adminMakesOwner = await server.graphql(
      ADD,
      { org, customer: another, role: 'owner' },
      await fx.session(admin),
    );
    expect(errorOf(adminMakesOwner.body)).toEqual({
      message: 'Only an owner can add an owner',
      code: 'FORBIDDEN',
      statusCode: 403,
    });
    const ownerMakesOwner = await server.graphql(
      ADD,
      { org, customer: another, role: 'owner' },
      await fx.session(owner),
    );
    expect(ownerMakesOwner.body.data.addOrganizationMember).toEqual({ customerId: another, role: 'owner' });
  });

  it('cannot be added twice, nor from another app', async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner' });
    const twice = await server.graphql(ADD, { org, customer: owner }, apiKey);
    expect(errorOf(twice.body)).toEqual({
      message: `Customer ${owner} is already a member of this organization`,
      code: 'CONFLICT',
      statusCode: 409,
    });
    const other = await newApp();
    const foreign = await other.fx.customer();
    expect(errorOf((await server.graphql(ADD, { org, customer: foreign }, apiKey)).body).statusCode).toBe(
      404,
    );
    const foreignOrg = await other.fx.organization({ [foreign]: 'owner' });
    const intoForeign = await server.graphql(ADD, { org: foreignOrg, customer: owner }, apiKey);
    expect(errorOf(intoForeign.body)).toEqual({
      message: `Organization ${foreignOrg} not found`,
      code: 'NOT_FOUND',
      statusCode: 404,
    });
  });

  it('always keep at least one owner', async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [member]: 'member' });
    const lastOwner = {
      message: 'An organization must keep at least one owner',
      code: 'CONFLICT',
      statusCode: 409,
    };
    expect(
      errorOf((await server.graphql(UPDATE, { org, customer: owner, role: 'admin' }, apiKey)).body),
    ).toEqual(lastOwner);
    expect(errorOf((await server.graphql(REMOVE, { org, customer: owner }, apiKey)).body)).toEqual(lastOwner);
    const leaving = await server.graphql(REMOVE, { org, customer: owner }, await fx.session(owner));
    expect(errorOf(leaving.body)).toEqual(lastOwner);

    await server.graphql(UPDATE, { org, customer: member, role: 'owner' }, apiKey);
    const demoted = await server.graphql(UPDATE, { org, customer: owner, role: 'admin' }, apiKey);
    expect(demoted.body.data.updateOrganizationMemberRole).toEqual({ customerId: owner, role: 'admin' });
  });

  it('never lose their last owner to concurrent demotions', async () => {
    const { apiKey, fx } = await newApp();
    const a = await fx.customer();
    const b = await fx.customer();
    const org = await fx.organization({ [a]: 'owner', [b]: 'owner' });
    const results = await Promise.all(
      [a, b].map((customer) => server.graphql(UPDATE, { org, customer, role: 'member' }, apiKey)),
    );
    expect(results.filter((r) => r.body.data?.updateOrganizationMemberRole).length).toBe(1);
    expect(results.filter((r) => errorOf(r.body)?.statusCode === 409).length).toBe(1);
    const after = await server.graphql(GET, { id: org }, apiKey);
    expect(
      after.body.data.organization.members.filter((m: { role: string }) => m.role === 'owner'),
    ).toHaveLength(1);
  });

  it('let an admin manage members and admins but not owners', async () => {
    const { fx } = await newApp();
    const owner = await fx.customer();
    const admin = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [admin]: 'admin', [member]: 'member' });
    const token = await fx.session(admin);
    const promote = await server.graphql(UPDATE, { org, customer: member, role: 'admin' }, token);
    expect(promote.body.data.updateOrganizationMemberRole).toEqual({ customerId: member, role: 'admin' });
    const demoteOwner = await server.graphql(UPDATE, { org, customer: owner, role: 'member' }, token);
    expect(errorOf(demoteOwner.body).statusCode).toBe(403);
    const removeOwner = await server.graphql(REMOVE, { org, customer: owner }, token);
    expect(errorOf(removeOwner.body)).toEqual({
      message: 'Only an owner can remove an owner',
      code: 'FORBIDDEN',
      statusCode: 403,
    });
    expect((await server.graphql(REMOVE, { org, customer: member }, token)).body.data).toEqual({
      removeOrganizationMember: true,
    });
  });

  it('may leave on their own', async () => {
    const { fx } = await newApp();
    const owner = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [member]: 'member' });
    const res = await server.graphql(REMOVE, { org, customer: member }, await fx.session(member));
    expect(res.body).toEqual({ data: { removeOrganizationMember: true } });
    const left = await server.graphql(LIST, {}, await fx.session(member));
    expect(left.body.data.organizations).toEqual([]);
  });
});

describe('switchOrganization', () => {
  it("returns a new session token whose session is the organization's context", async () => {
    const { appId, fx } = await newApp();
    const team = await fx.plan('team', { sso: true });
    const me = await fx.customer();
    const org = await fx.organization({ [me]: 'admin' });
    await fx.subscription({ organizationId: org }, team, 'active');
    const personal = await fx.session(me);

    const res = await server.graphql(SWITCH, { org }, personal);
    expect(res.body.errors).toBeUndefined();
    const switched = res.body.data.switchOrganization;
    expect(switched).toEqual({
      sessionToken: expect.stringMatching(/^tg_st_/),
      organizationId: org,
      orgRole: 'admin',
      entitlements: { planName: 'Team', features: { sso: true } },
    });
    expect(switched.sessionToken).not.toBe(personal);

    const session = await server.http
      .get(`/v1/apps/${appId}/auth/session`)
      .set('authorization', `Bearer ${switched.sessionToken}`);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      customer: { id: me },
      entitlements: { planName: 'Team', features: { sso: true } },
      organizationId: org,
      orgRole: 'admin',
    });
    const check = await server.http
      .get('/v1/entitlements/check/sso')
      .set('authorization', `Bearer ${switched.sessionToken}`);
    expect(check.body).toEqual({ feature: 'sso', allowed: true, value: true });
    // The personal token keeps working in the personal context.
    const mine = await server.http.get('/v1/entitlements').set('authorization', `Bearer ${personal}`);
    expect(mine.body).toEqual({ planName: null, features: {} });
  });

  it('answers 404 for an organization the customer does not belong to, and 403 to an API key', async () => {
    const { apiKey, fx } = await newApp();
    const me = await fx.customer();
    const org = await fx.organization({ [await fx.customer()]: 'owner' });
    const res = await server.graphql(SWITCH, { org }, await fx.session(me));
    expect(errorOf(res.body)).toEqual({
      message: `Organization ${org} not found`,
      code: 'NOT_FOUND',
      statusCode: 404,
    });
    expect(errorOf((await server.graphql(SWITCH, { org }, apiKey)).body).statusCode).toBe(403);
  });

  it("stops a removed member's organization session at once, and follows role changes", async () => {
    const { apiKey, fx } = await newApp();
    const owner = await fx.customer();
    const member = await fx.customer();
    const org = await fx.organization({ [owner]: 'owner', [member]: 'member' });
    const personal = await fx.session(member);
    const orgToken = (await server.graphql(SWITCH, { org }, personal)).body.data.switchOrganization
      .sessionToken;
    const entitlements = () => server.http.get('/v1/entitlements').set('authorization', `Bearer ${orgToken}`);
    expect((await entitlements()).status).toBe(200);

    await server.graphql(UPDATE, { org, customer: member, role: 'admin' }, apiKey);
    const asAdmin = await server.graphql(ADD, { org, customer: await fx.customer() }, orgToken);
    expect(asAdmin.body.errors).toBeUndefined();

    await server.graphql(REMOVE, { org, customer: member }, apiKey);
    const after = await entitlements();
    expect(after.status).toBe(401);
    expect(after.body).toEqual({
      statusCode: 401,
      message: 'The session no longer has access to this organization',
      error: 'Unauthorized',
    });
    const stillPersonal = await server.http
      .get('/v1/entitlements')
      .set('authorization', `Bearer ${personal}`);
    expect(stillPersonal.status).toBe(200);
  });
});
