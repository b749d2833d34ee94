import {
  COUPON_REASONS,
  couponProblem,
  type PriceFacts,
  type PromotionCodeFacts,
} from '../../src/modules/coupons/coupon-rules.js';

const NOW = 1_800_000_000;

const price: PriceFacts = { id: 'price_pro', product: 'prod_pro', unitAmount: 2000, currency: 'usd' };

function code(
  change: Partial<Omit<PromotionCodeFacts, 'coupon'>> = {},
  coupon: Partial<PromotionCodeFacts['coupon']> = {},
): PromotionCodeFacts {
  return {
    id: 'promo_1',
    code: 'SAVE10',
    active: true,
    expiresAt: null,
    maxRedemptions: null,
    timesRedeemed: 0,
    minimumAmount: null,
    minimumAmountCurrency: null,
    ...change,
    coupon: {
      id: 'co_1',
      redeemBy: null,
      maxRedemptions: null,
      timesRedeemed: 0,
      valid: true,
      amountOffCurrency: null,
      appliesToProducts: null,
      ...coupon,
    },
  };
}

describe('coupon rules', () => {
  it('accepts a live code without restrictions', () => {
    expect(couponProblem(code(), price, NOW)).toBeNull();
  });

  it('reports an unknown code', () => {
    expect(couponProblem(null, price, NOW)).toBe(COUPON_REASONS.unknown);
  });

  it('reports expiry of the promotion code or of its coupon', () => {
    expect(couponProblem(code({ expiresAt: NOW }), price, NOW)).toBe(COUPON_REASONS.expired);
    expect(couponProblem(code({}, { redeemBy: NOW - 1, valid: false }), price, NOW)).toBe(
      COUPON_REASONS.expired,
    );
    expect(couponProblem(code({ expiresAt: NOW + 1 }), price, NOW)).toBeNull();
  });

  it('reports a code or coupon that reached its redemption limit', () => {
    expect(couponProblem(code({ maxRedemptions: 2, timesRedeemed: 2 }), price, NOW)).toBe(
      COUPON_REASONS.usedUp,
    );
    expect(couponProblem(code({}, { maxRedemptions: 1, timesRedeemed: 1, valid: false }), price, NOW)).toBe(
      COUPON_REASONS.usedUp,
    );
    expect(couponProblem(code({ maxRedemptions: 2, timesRedeemed: 1 }), price, NOW)).toBeNull();
  });

  it('reports a deactivated code', () => {
    expect(couponProblem(code({ active: false }), price, NOW)).toBe(COUPON_REASONS.inactive);
  });

  it('reports a coupon restricted to other products as not valid for the plan', () => {
    expect(couponProblem(code({}, { appliesToProducts: ['prod_team'] }), price, NOW)).toBe(
      COUPON_REASONS.notForPlan,
    );
    expect(couponProblem(code({}, { appliesToProducts: ['prod_team', 'prod_pro'] }), price, NOW)).toBeNull();
  });

  it('reports promotion-code minimum amounts the plan does not reach, or in another currency', () => {
    const min = (minimumAmount: number, minimumAmountCurrency: string) =>
      couponProblem(code({ minimumAmount, minimumAmountCurrency }), price, NOW);
    expect(min(5000, 'usd')).toBe(COUPON_REASONS.notForPlan);
    expect(min(1000, 'eur')).toBe(COUPON_REASONS.notForPlan);
    expect(min(2000, 'USD')).toBeNull();
  });

  it('reports a fixed-amount coupon in another currency, and any coupon on a free plan', () => {
    expect(couponProblem(code({}, { amountOffCurrency: 'eur' }), price, NOW)).toBe(COUPON_REASONS.notForPlan);
    expect(couponProblem(code(), null, NOW)).toBe(COUPON_REASONS.notForPlan);
  });

  it('gives every reason a distinct text', () => {
    const reasons = Object.values(COUPON_REASONS);
    expect(new Set(reasons).size).toBe(reasons.length);
  });
});
