import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../../src/core/errors.js';
import { ANONYMOUS, type ApiKeyPrincipal, type Principal } from '../../src/core/principal.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { expectDomainError, type ServiceCore, startServices } from '../helpers/services.js';

/** EntitlementsService called directly with a Principal, on the test database. */

let core: ServiceCore;
let principal: ApiKeyPrincipal;
let fx: Fixtures;
let freePlan: string;
let proPlan: string;
let teamPlan: string;

beforeAll(async () => {
  core = await startServices();
  ({ principal } = await core.createApp({ organizationsEnabled: true }));
  fx = new Fixtures(core, principal.appId);
  freePlan = await fx.plan('free', { seats: 1, exports: false }, { isDefault: true });
  teamPlan = await fx.plan('team', { seats: 50 });
  proPlan = await fx.plan('pro', { seats: 10, exports: true, tier: 'gold', api: 0, note: '' });
});
afterAll(async () => {
  await core.close();
});

const entitlements = (query: unknown, who: Principal = principal) =>
  core.run(() => core.services.entitlements.getEntitlements(who, query));
const check = (feature: unknown, query: unknown, who: Principal = principal) =>
  core.run(() => core.services.entitlements.checkFeature(who, feature, query));

describe('EntitlementsService', () => {
  it('grants the default plan without a subscription, and the newest entitling one’s plan with it', async () => {
    const customerId = await fx.customer();
    expect(await entitlements({ customerId })).toEqual({
      planName: 'Free',
      features: { seats: 1, exports: false },
    });
    const sub = await fx.subscription({ customerId }, proPlan, 'active');
    expect(await entitlements({ customerId })).toEqual({
      planName: 'Pro',
      features: { seats: 10, exports: true, tier: 'gold', api: 0, note: '' },
    });
    for (const status of ['paused', 'canceled', 'incomplete_expired'] as const) {
      await fx.setSubscription(sub, { status });
      expect([status, (await entitlements({ customerId })).planName]).toEqual([status, 'Free']);
    }
    for (const status of ['trialing', 'past_due'] as const) {
      await fx.setSubscription(sub, { status });
      expect([status, (await entitlements({ customerId })).planName]).toEqual([status, 'Pro']);
    }
    // An older entitling subscription does not win over the newest one.
    await fx.subscription({ customerId }, teamPlan, 'active', new Date(Date.now() - 86_400_000));
    expect((await entitlements({ customerId })).planName).toBe('Pro');
  });

  it('answers a feature check: true, a positive number or a non-empty string grants it', async () => {
    const customerId = await fx.customer();
    await fx.subscription({ customerId }, proPlan, 'active');
    const checks = await Promise.all(
      ['exports', 'seats', 'tier', 'api', 'note', 'missing'].map((f) => check(f, { customerId })),
    );
    expect(checks).toEqual([
      { feature: 'exports', allowed: true, value: true },
      { feature: 'seats', allowed: true, value: 10 },
      { feature: 'tier', allowed: true, value: 'gold' },
      { feature: 'api', allowed: false, value: 0 },
      { feature: 'note', allowed: false, value: '' },
      { feature: 'missing', allowed: false, value: null },
    ]);
  });

  it('keeps personal and organization contexts apart, for API keys and sessions alike', async () => {
    const member = await fx.customer();
    const organizationId = await fx.organization({ [member]: 'member' });
    await fx.subscription({ organizationId, customerId: member }, proPlan, 'active');
    expect((await entitlements({ organizationId })).planName).toBe('Pro');
    expect((await entitlements({ customerId: member })).planName).toBe('Free');

    const personal = await core.principalOf(await fx.session(member));
    const inOrganization = await core.principalOf(await fx.session(member, organizationId));
    expect((await entitlements({}, personal)).planName).toBe('Free');
    expect((await entitlements(undefined, inOrganization)).planName).toBe('Pro');
    expect(await check('exports', {}, inOrganization)).toEqual({
      feature: 'exports',
      allowed: true,
      value: true,
    });
  });

  it('shows a committed change on the very next call', async () => {
    const customerId = await fx.customer();
    const sub = await fx.subscription({ customerId }, proPlan, 'active');
    expect((await check('exports', { customerId })).allowed).toBe(true);
    await fx.setPlanFeatures(proPlan, { seats: 10, exports: false, tier: 'gold', api: 0, note: '' });
    expect((await check('exports', { customerId })).allowed).toBe(false);
    await fx.setPlanFeatures(proPlan, { seats: 10, exports: true, tier: 'gold', api: 0, note: '' });
    await fx.setSubscription(sub, { planId: freePlan });
    expect(await check('seats', { customerId })).toEqual({ feature: 'seats', allowed: true, value: 1 });
  });

  it('refuses what the caller may not ask, with the domain error both transports map', async () => {
    const customerId = await fx.customer();
    await expectDomainError(
      entitlements({}),
      ValidationError,
      'exactly one of customerId or organizationId is required',
    );
    await expectDomainError(
      entitlements({ customerId, organizationId: 'org_x' }),
      ValidationError,
      'exactly one of customerId or organizationId is required',
    );
    const { principal: other } = await core.createApp();
    await expectDomainError(
      entitlements({ customerId }, other),
      NotFoundError,
      `Customer ${customerId} not found`,
    );
    await expectDomainError(
      entitlements({ organizationId: 'org_x' }, other),
      ForbiddenError,
      'Organizations are not enabled for this app',
    );
    await expectDomainError(
      entitlements({ organizationId: 'org_x' }),
      NotFoundError,
      'Organization org_x not found',
    );
    const session = await core.principalOf(await fx.session(customerId));
    await expectDomainError(
      entitlements({ customerId }, session),
      ValidationError,
      'a session token uses its own context: customerId and organizationId are for API keys',
    );
    await expectDomainError(
      entitlements({ customerId }, ANONYMOUS),
      UnauthorizedError,
      'Invalid or missing credentials',
    );
    await expectDomainError(check('', { customerId }), ValidationError, 'must not be empty');
  });
});
