import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from '../../src/core/errors.js';
import { ADMIN, ANONYMOUS, type ApiKeyPrincipal, type Principal } from '../../src/core/principal.js';
import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { expectDomainError, type ServiceCore, startServices } from '../helpers/services.js';

/**
 * SubscriptionLifecycleService called directly with a Principal: each change is made at the Stripe
 * emulator (through the SDK) and then stored; refused changes leave both sides alone.
 */

let core: ServiceCore;
let principal: ApiKeyPrincipal;
let billing: BillingFixtures;
let pro: Awaited<ReturnType<BillingFixtures['plan']>>;

beforeAll(async () => {
  core = await startServices();
  ({ principal } = await core.createApp({ organizationsEnabled: true }));
  billing = new BillingFixtures(core, principal.appId);
  pro = await billing.plan({ slug: 'pro' });
});
afterAll(async () => {
  await core.close();
});

type Action = 'cancel' | 'pause' | 'resume';
const methods = {
  cancel: 'cancelSubscription',
  pause: 'pauseSubscription',
  resume: 'resumeSubscription',
} as const;

const act = (action: Action, id: string, who: Principal = principal, input?: unknown) =>
  core.run(() => core.services.subscriptionLifecycle[methods[action]](who, id, input));

/** A customer linked to Stripe with a paid subscription to Pro. */
async function subscribed(options: { trialDays?: number } = {}) {
  const customer = await billing.customer();
  const sub = await billing.subscription(
    { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
    pro,
    options,
  );
  return { customer, ...sub };
}

const atStripe = (stripeSubscriptionId: string) =>
  billing.stripe.subscriptions.retrieve(stripeSubscriptionId);

describe('SubscriptionLifecycleService', () => {
  it('cancels at Stripe, then stores and returns the canceled subscription', async () => {
    const { id, stripeSubscriptionId, customer } = await subscribed();
    const canceled = await act('cancel', id);
    expect(canceled).toMatchObject({ id, status: 'canceled', cancelAtPeriodEnd: false });
    expect(canceled.canceledAt).toBeInstanceOf(Date);
    expect((await atStripe(stripeSubscriptionId)).status).toBe('canceled');
    const stored = await billing.stored(id);
    expect({ status: stored.status, canceledAt: stored.canceledAt }).toEqual({
      status: 'canceled',
      canceledAt: canceled.canceledAt,
    });
    const entitlements = await core.run(() =>
      core.services.entitlements.getEntitlements(principal, { customerId: customer.id }),
    );
    expect(entitlements).toEqual({ planName: null, features: {} });
  });

  it('schedules a cancellation for the period end, and resume withdraws it', async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    const scheduled = await act('cancel', id, principal, { atPeriodEnd: true });
    expect(scheduled).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
    expect((await atStripe(stripeSubscriptionId)).cancel_at_period_end).toBe(true);
    await expectDomainError(
      act('cancel', id, principal, { atPeriodEnd: true }),
      ConflictError,
      'The subscription is already scheduled to cancel at the end of its period',
    );
    const resumed = await act('resume', id);
    expect(resumed).toMatchObject({ status: 'active', cancelAtPeriodEnd: false, canceledAt: null });
    expect((await atStripe(stripeSubscriptionId)).cancel_at_period_end).toBe(false);
  });

  it('pauses collection (no entitlements while paused) and resumes a trial back to trialing', async () => {
    const { id, stripeSubscriptionId, customer } = await subscribed({ trialDays: 7 });
    expect((await act('pause', id)).status).toBe('paused');
    expect((await atStripe(stripeSubscriptionId)).pause_collection).toMatchObject({ behavior: 'void' });
    const paused = await core.run(() =>
      core.services.entitlements.getEntitlements(principal, { customerId: customer.id }),
    );
    expect(paused.planName).toBeNull();
    await expectDomainError(act('pause', id), ConflictError, 'The subscription is already paused');
    const resumed = await act('resume', id);
    expect(resumed.status).toBe('trialing');
    expect(resumed.trialEnd).toBeInstanceOf(Date);
    expect((await atStripe(stripeSubscriptionId)).pause_collection).toBeNull();
  });

  it('refuses every change of a canceled subscription and leaves Stripe alone', async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    await act('cancel', id);
    const before = await atStripe(stripeSubscriptionId);
    for (const action of ['cancel', 'pause', 'resume'] as const) {
      await expectDomainError(
        act(action, id),
        ConflictError,
        'The subscription is canceled: it can no longer be changed',
      );
    }
    expect(await atStripe(stripeSubscriptionId)).toEqual(before);
  });

  it('judges two simultaneous pauses one after the other: one succeeds, one conflicts', async () => {
    const { id } = await subscribed();
    const outcomes = await Promise.allSettled([act('pause', id), act('pause', id)]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(ConflictError);
    expect((await billing.stored(id)).status).toBe('paused');
  });

  it('refuses invalid options with a ValidationError before calling Stripe', async () => {
    const { id, stripeSubscriptionId } = await subscribed();
    await expectDomainError(
      act('cancel', id, principal, { atPeriodEnd: 'yes' }),
      ValidationError,
      'atPeriodEnd: Invalid input: expected boolean, received string',
    );
    await expectDomainError(
      act('pause', id, principal, { behavior: 'void' }),
      ValidationError,
      'unknown field: behavior',
    );
    expect((await atStripe(stripeSubscriptionId)).status).toBe('active');
  });

  it('lets a session change its own subscription only; other apps and callers see none', async () => {
    const mine = await subscribed();
    const theirs = await subscribed();
    const session = await core.principalOf(await billing.session(mine.customer.id));
    expect((await act('pause', mine.id, session)).status).toBe('paused');
    await expectDomainError(
      act('pause', theirs.id, session),
      NotFoundError,
      `Subscription ${theirs.id} not found`,
    );
    const { principal: otherApp } = await core.createApp();
    await expectDomainError(
      act('pause', theirs.id, otherApp),
      NotFoundError,
      `Subscription ${theirs.id} not found`,
    );
    await expectDomainError(
      act('pause', theirs.id, ANONYMOUS),
      UnauthorizedError,
      'Invalid or missing credentials',
    );
    await expectDomainError(
      act('pause', theirs.id, ADMIN),
      ForbiddenError,
      'This operation needs an API key or a customer session token',
    );
    expect((await billing.stored(theirs.id)).status).toBe('active');
  });

  it("lets an organization's owner and admin change its subscription, not a plain member", async () => {
    const owner = await billing.customer();
    const admin = await billing.customer({ linked: false });
    const member = await billing.customer({ linked: false });
    const organizationId = await billing.organization([
      { customerId: owner.id, role: 'owner' },
      { customerId: admin.id, role: 'admin' },
      { customerId: member.id, role: 'member' },
    ]);
    const { id } = await billing.subscription(
      { customerId: owner.id, stripeCustomerId: owner.stripeCustomerId!, organizationId },
      pro,
    );
    const sessionOf = async (customerId: string) =>
      core.principalOf(await billing.session(customerId, organizationId));
    await expectDomainError(
      act('pause', id, await sessionOf(member.id)),
      ForbiddenError,
      "Only an owner or admin of the organization can change the organization's subscription",
    );
    expect((await billing.stored(id)).status).toBe('active');
    expect((await act('pause', id, await sessionOf(admin.id))).status).toBe('paused');
    expect((await act('resume', id, await sessionOf(owner.id))).status).toBe('active');
  });
});
