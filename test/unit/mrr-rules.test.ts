import {
  halfUp,
  itemMrr,
  type MrrCoupon,
  type MrrItem,
  movementKind,
  subscriptionMrr,
} from '../../src/modules/analytics/mrr-rules.js';

const item = (change: Partial<MrrItem> = {}): MrrItem => ({
  unitAmount: 10_000,
  currency: 'usd',
  interval: 'month',
  intervalCount: 1,
  usageType: 'licensed',
  quantity: 1,
  ...change,
});

const coupon = (change: Partial<MrrCoupon>): MrrCoupon => ({
  id: 'co_1',
  duration: 'forever',
  percentOff: null,
  amountOff: null,
  currency: null,
  ...change,
});

const mrrOf = (items: MrrItem[], coupons: MrrCoupon[] = [], status = 'active') =>
  subscriptionMrr({ status, items, coupons }).amount;

describe('MRR rules', () => {
  it("reproduces Stripe's documented example: 100 × 100 USD monthly and 50 × 600 USD yearly is 12,500 USD", () => {
    // docs.stripe.com/billing/subscriptions/analytics/glossary; its formula prints 800 USD/12 but its
    // plan (600 USD per year) and its total (12,500 USD) agree with each other.
    const planA = Array.from({ length: 100 }, () => mrrOf([item({ unitAmount: 10_000 })]));
    const planB = Array.from({ length: 50 }, () => mrrOf([item({ unitAmount: 60_000, interval: 'year' })]));
    expect([...planA, ...planB].reduce((a, b) => a + b, 0)).toBe(1_250_000);
  });

  it('normalises yearly, weekly and daily prices and honours interval counts', () => {
    expect(itemMrr(item({ unitAmount: 12_000, interval: 'year' }))).toBe(1_000);
    expect(itemMrr(item({ unitAmount: 1_000, interval: 'week' }))).toBe(4_333); // 1000 × 52 / 12 = 4333.33
    expect(itemMrr(item({ unitAmount: 100, interval: 'day' }))).toBe(3_042); // 100 × 365 / 12 = 3041.67
    expect(itemMrr(item({ unitAmount: 3_000, interval: 'month', intervalCount: 3 }))).toBe(1_000);
    expect(itemMrr(item({ unitAmount: 1_000, interval: 'week', intervalCount: 2 }))).toBe(2_167); // 2166.67
    expect(itemMrr(item({ unitAmount: 1_000, interval: 'year', intervalCount: 2 }))).toBe(42); // 41.67
  });

  it('multiplies by quantity before rounding once per item, half-up', () => {
    expect(itemMrr(item({ unitAmount: 1_000, interval: 'year', quantity: 3 }))).toBe(250);
    expect(itemMrr(item({ unitAmount: 1, interval: 'year', quantity: 6 }))).toBe(1); // 0.5 → 1
    expect(itemMrr(item({ unitAmount: 1, interval: 'year', quantity: 5 }))).toBe(0); // 0.4167 → 0
    expect(halfUp(5, 2)).toBe(3);
    expect(halfUp(7, 2)).toBe(4);
    // Two items each rounded on their own: 0.5 + 0.5 → 1 + 1.
    expect(
      mrrOf([item({ unitAmount: 6, interval: 'year' }), item({ unitAmount: 6, interval: 'year' })]),
    ).toBe(2);
  });

  it('excludes metered items, zero prices and statuses other than active and past_due', () => {
    expect(mrrOf([item(), item({ usageType: 'metered', unitAmount: 5_000 })])).toBe(10_000);
    expect(mrrOf([item({ unitAmount: 0 })])).toBe(0);
    expect(mrrOf([item({ unitAmount: null })])).toBe(0);
    expect(mrrOf([item()], [], 'past_due')).toBe(10_000);
    for (const status of ['trialing', 'paused', 'unpaid', 'canceled', 'incomplete', 'incomplete_expired']) {
      expect(mrrOf([item()], [], status)).toBe(0);
    }
    // Not counted now, but what it would count for is kept (a trial's amount at conversion).
    expect(subscriptionMrr({ status: 'trialing', items: [item()], coupons: [] }).listAmount).toBe(10_000);
  });

  it('lets a forever coupon reduce MRR and a repeating or once coupon not', () => {
    expect(mrrOf([item()], [coupon({ percentOff: 50 })])).toBe(5_000);
    expect(mrrOf([item()], [coupon({ duration: 'repeating', percentOff: 50 })])).toBe(10_000);
    expect(mrrOf([item()], [coupon({ duration: 'once', percentOff: 50 })])).toBe(10_000);
    expect(mrrOf([item()], [coupon({ percentOff: 12.5 })])).toBe(8_750);
    // A fixed amount per billing period, normalised like the items: 1,200 off a yearly price is 100 a month.
    expect(
      mrrOf(
        [item({ unitAmount: 12_000, interval: 'year' })],
        [coupon({ amountOff: 1_200, currency: 'usd' })],
      ),
    ).toBe(900);
    // Another currency's amount does not apply; a discount never takes MRR below 0.
    expect(mrrOf([item()], [coupon({ amountOff: 1_000, currency: 'eur' })])).toBe(10_000);
    expect(mrrOf([item()], [coupon({ amountOff: 50_000, currency: 'usd' })])).toBe(0);
  });

  it('classifies movements of a subject: new, expansion, contraction, churn, reactivation', () => {
    expect(movementKind(0, 1_000, false)).toBe('new');
    expect(movementKind(1_000, 3_000, true)).toBe('expansion');
    expect(movementKind(3_000, 2_000, true)).toBe('contraction');
    expect(movementKind(2_000, 0, true)).toBe('churn');
    expect(movementKind(0, 2_000, true)).toBe('reactivation');
    expect(movementKind(2_000, 2_000, true)).toBeNull();
  });
});
