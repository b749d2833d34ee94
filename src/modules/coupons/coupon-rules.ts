/**
 * Why a promotion code cannot be applied to a plan's price, as one pure rule over provider data, so the
 * answer can be tested without a provider and given alike by every caller.
 */

/** A coupon at the payment provider (the discount a promotion code grants). */
export interface CouponFacts {
  readonly id: string;
  /** Unix seconds after which it cannot be redeemed, or null. */
  readonly redeemBy: number | null;
  readonly maxRedemptions: number | null;
  readonly timesRedeemed: number;
  /** False when the provider no longer applies it, whatever the reason. */
  readonly valid: boolean;
  /** Set for a fixed-amount coupon, which only applies to prices in this currency. */
  readonly amountOffCurrency: string | null;
  /** Products it is restricted to (`applies_to`), or null for every product. */
  readonly appliesToProducts: readonly string[] | null;
}

/** A customer-facing promotion code and its coupon. */
export interface PromotionCodeFacts {
  readonly id: string;
  readonly code: string;
  readonly active: boolean;
  readonly expiresAt: number | null;
  readonly maxRedemptions: number | null;
  readonly timesRedeemed: number;
  /** Restriction: the smallest amount (in `minimumAmountCurrency`) the code may discount. */
  readonly minimumAmount: number | null;
  readonly minimumAmountCurrency: string | null;
  readonly coupon: CouponFacts;
}

/** The price a plan is sold at. */
export interface PriceFacts {
  readonly id: string;
  readonly product: string;
  readonly unitAmount: number | null;
  readonly currency: string;
}

/** The reasons, distinct and stable so clients can tell them apart. */
export const COUPON_REASONS = {
  unknown: 'Coupon code not found',
  expired: 'Coupon expired',
  usedUp: 'Coupon has reached its maximum number of redemptions',
  inactive: 'Coupon is no longer active',
  notForPlan: 'Coupon is not valid for this plan',
} as const;

export type CouponReason = (typeof COUPON_REASONS)[keyof typeof COUPON_REASONS];

/**
 * Null when `promotionCode` can discount `price` at `now` (Unix seconds), else the reason. A plan
 * without a price (a free plan) takes no coupon. Expiry and exhaustion are checked before the plan, so
 * an expired code is reported as expired whatever plan it is tried on.
 */
export function couponProblem(
  promotionCode: PromotionCodeFacts | null,
  price: PriceFacts | null,
  now: number,
): CouponReason | null {
  if (!promotionCode) return COUPON_REASONS.unknown;
  const { coupon } = promotionCode;
  const ended = (at: number | null) => at !== null && at <= now;
  const exhausted = (max: number | null, used: number) => max !== null && used >= max;
  if (ended(promotionCode.expiresAt) || ended(coupon.redeemBy)) return COUPON_REASONS.expired;
  if (
    exhausted(promotionCode.maxRedemptions, promotionCode.timesRedeemed) ||
    exhausted(coupon.maxRedemptions, coupon.timesRedeemed)
  ) {
    return COUPON_REASONS.usedUp;
  }
  if (!promotionCode.active || !coupon.valid) return COUPON_REASONS.inactive;
  if (!price) return COUPON_REASONS.notForPlan;
  const currency = price.currency.toLowerCase();
  if (coupon.appliesToProducts !== null && !coupon.appliesToProducts.includes(price.product)) {
    return COUPON_REASONS.notForPlan;
  }
  if (coupon.amountOffCurrency !== null && coupon.amountOffCurrency.toLowerCase() !== currency) {
    return COUPON_REASONS.notForPlan;
  }
  if (promotionCode.minimumAmount !== null) {
    const sameCurrency = promotionCode.minimumAmountCurrency?.toLowerCase() === currency;
    if (!sameCurrency || (price.unitAmount ?? 0) < promotionCode.minimumAmount)
      return COUPON_REASONS.notForPlan;
  }
  return null;
}
