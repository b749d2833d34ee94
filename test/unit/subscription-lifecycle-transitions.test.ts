import {
  SUBSCRIPTION_STATUSES,
  type SubscriptionStatus,
} from '../../src/modules/payments/payment-provider.js';
import {
  type LifecycleAction,
  statusFromProvider,
  transitionProblem,
} from '../../src/modules/subscriptions/subscription-transitions.js';

/** The whole table: for each action, the states in which it applies; every other state is a 409. */
const APPLIES: Record<LifecycleAction, (status: SubscriptionStatus, cancelAtPeriodEnd: boolean) => boolean> =
  {
    cancel: (s) => s !== 'canceled' && s !== 'incomplete_expired',
    cancel_at_period_end: (s, scheduled) =>
      !scheduled && ['trialing', 'active', 'past_due', 'paused'].includes(s),
    pause: (s) => ['trialing', 'active', 'past_due'].includes(s),
    resume: (s, scheduled) => s === 'paused' || (scheduled && ['trialing', 'active', 'past_due'].includes(s)),
  };

describe('subscription transition rules', () => {
  const actions = Object.keys(APPLIES) as LifecycleAction[];
  for (const action of actions) {
    for (const status of SUBSCRIPTION_STATUSES) {
      for (const cancelAtPeriodEnd of [false, true]) {
        const applies = APPLIES[action](status, cancelAtPeriodEnd);
        it(`${applies ? 'allows' : 'refuses'} ${action} on a ${status} subscription${cancelAtPeriodEnd ? ' scheduled to cancel' : ''}`, () => {
          const problem = transitionProblem(action, { status, cancelAtPeriodEnd });
          if (applies) expect(problem).toBeNull();
          else expect(typeof problem).toBe('string');
        });
      }
    }
  }

  it('explains why a refused transition does not apply', () => {
    expect(transitionProblem('resume', { status: 'active', cancelAtPeriodEnd: false })).toBe(
      'A subscription that is active and not scheduled to cancel cannot be resumed',
    );
    expect(transitionProblem('pause', { status: 'canceled', cancelAtPeriodEnd: false })).toBe(
      'The subscription is canceled: it can no longer be changed',
    );
    expect(transitionProblem('pause', { status: 'paused', cancelAtPeriodEnd: false })).toBe(
      'The subscription is already paused',
    );
    expect(transitionProblem('cancel_at_period_end', { status: 'active', cancelAtPeriodEnd: true })).toBe(
      'The subscription is already scheduled to cancel at the end of its period',
    );
  });
});

describe('status from the provider', () => {
  it('reports a running subscription with paused collection as paused', () => {
    expect(statusFromProvider({ status: 'active', collectionPaused: true })).toBe('paused');
    expect(statusFromProvider({ status: 'trialing', collectionPaused: true })).toBe('paused');
  });

  it("keeps Stripe's status otherwise", () => {
    expect(statusFromProvider({ status: 'active', collectionPaused: false })).toBe('active');
    expect(statusFromProvider({ status: 'canceled', collectionPaused: true })).toBe('canceled');
    expect(statusFromProvider({ status: 'paused', collectionPaused: false })).toBe('paused');
  });
});
