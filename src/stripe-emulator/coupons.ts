import { invalid, missing } from './errors.js';
import { now, randomId } from './objects.js';
import { allow, arr, bool, int, mergeMetadata, num, type Obj, obj, type Params, str } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/** `/v1/coupons` and `/v1/promotion_codes`, and the rules by which a discount applies to a checkout. */

export function createCoupon(em: Emulation, params: Params): Obj {
  allow(params, [
    'id',
    'name',
    'percent_off',
    'amount_off',
    'currency',
    'duration',
    'duration_in_months',
    'max_redemptions',
    'redeem_by',
    'applies_to',
    'metadata',
  ]);
  const percentOff = num(params, 'percent_off');
  const amountOff = int(params, 'amount_off');
  if ((percentOff === undefined) === (amountOff === undefined)) {
    throw invalid('You must pass exactly one of percent_off or amount_off.');
  }
  if (percentOff !== undefined && (percentOff <= 0 || percentOff > 100))
    throw invalid('Invalid percent_off', 'percent_off');
  if (amountOff !== undefined && !str(params, 'currency'))
    throw invalid('Missing required param: currency.', 'currency');
  const duration = str(params, 'duration') ?? 'once';
  if (!['once', 'repeating', 'forever'].includes(duration)) throw invalid('Invalid duration', 'duration');
  const id = str(params, 'id') ?? randomId('', 8);
  if (em.state.coupons[id]) throw invalid('Coupon already exists.', 'id');
  const appliesTo = obj(params, 'applies_to');
  const coupon: Obj = {
    id,
    object: 'coupon',
    amount_off: amountOff ?? null,
    created: now(),
    currency: str(params, 'currency')?.toLowerCase() ?? null,
    duration,
    duration_in_months: int(params, 'duration_in_months') ?? null,
    livemode: false,
    max_redemptions: int(params, 'max_redemptions') ?? null,
    metadata: mergeMetadata({}, params),
    name: str(params, 'name') ?? null,
    percent_off: percentOff ?? null,
    redeem_by: int(params, 'redeem_by') ?? null,
    times_redeemed: 0,
    valid: true,
    ...(appliesTo ? { applies_to: { products: arr(appliesTo, 'products').map(String) } } : {}),
  };
  em.state.coupons[id] = coupon;
  return couponView(coupon);
}

/** `valid` is derived: a coupon past `redeem_by` or out of redemptions cannot be applied. */
function couponView(coupon: Obj): Obj {
  const valid =
    !coupon._deleted &&
    (coupon.redeem_by === null || coupon.redeem_by > now()) &&
    (coupon.max_redemptions === null || coupon.times_redeemed < coupon.max_redemptions);
  coupon.valid = valid;
  return coupon;
}

/** `GET /v1/coupons`. */
export function listCoupons(em: Emulation, params: Params): Obj {
  allow(params, ['created', 'limit', 'starting_after', 'ending_before']);
  const live = Object.values(em.state.coupons).filter((c) => !c._deleted);
  return listPage('/v1/coupons', live.map(couponView), params);
}

/**
 * `DELETE /v1/coupons/:id`: no new redemptions; discounts already applied keep working, as at Stripe
 * (the emulator keeps the coupon for them, out of the API's reach).
 */
export function deleteCoupon(em: Emulation, id: string): Obj {
  const coupon = couponOrFail(em, id);
  coupon._deleted = true;
  coupon.valid = false;
  em.emit('coupon.deleted', publicCoupon(coupon));
  return { id, object: 'coupon', deleted: true };
}

const publicCoupon = (coupon: Obj): Obj =>
  Object.fromEntries(Object.entries(coupon).filter(([k]) => !k.startsWith('_')));

export function couponOrFail(em: Emulation, id: string, param = 'id'): Obj {
  const coupon = findOrFail('coupon', em.state.coupons, id, param);
  if (coupon._deleted) throw missing('coupon', id, param);
  return couponView(coupon);
}

export function createPromotionCode(em: Emulation, params: Params): Obj {
  allow(params, [
    'promotion',
    'coupon',
    'code',
    'active',
    'expires_at',
    'max_redemptions',
    'customer',
    'restrictions',
    'metadata',
  ]);
  const promotion = obj(params, 'promotion');
  const couponId = (promotion ? str(promotion, 'coupon') : undefined) ?? str(params, 'coupon');
  if (!couponId) throw invalid('Missing required param: promotion[coupon].', 'promotion[coupon]');
  couponOrFail(em, couponId, 'promotion[coupon]');
  const code = str(params, 'code') ?? randomId('', 8).toUpperCase();
  if (!/^[a-zA-Z0-9]{1,500}$/.test(code)) throw invalid('Invalid code', 'code');
  const taken = Object.values(em.state.promotionCodes).some(
    (p) => p.active && p.code.toLowerCase() === code.toLowerCase(),
  );
  if (taken) throw invalid('An active promotion code with `code` already exists.', 'code');
  const restrictions = obj(params, 'restrictions') ?? {};
  const promotionCode: Obj = {
    id: randomId('promo_', 24),
    object: 'promotion_code',
    active: bool(params, 'active') ?? true,
    code,
    created: now(),
    customer: str(params, 'customer') ?? null,
    customer_account: null,
    expires_at: int(params, 'expires_at') ?? null,
    livemode: false,
    max_redemptions: int(params, 'max_redemptions') ?? null,
    metadata: mergeMetadata({}, params),
    promotion: { coupon: couponId, type: 'coupon' },
    restrictions: {
      first_time_transaction: bool(restrictions, 'first_time_transaction') ?? false,
      minimum_amount: int(restrictions, 'minimum_amount') ?? null,
      minimum_amount_currency: str(restrictions, 'minimum_amount_currency')?.toLowerCase() ?? null,
    },
    times_redeemed: 0,
  };
  em.state.promotionCodes[promotionCode.id] = promotionCode;
  return promotionCode;
}

export function listPromotionCodes(em: Emulation, params: Params): Obj {
  allow(params, ['code', 'active', 'coupon', 'customer', 'limit', 'starting_after']);
  const code = str(params, 'code');
  const active = bool(params, 'active');
  const coupon = str(params, 'coupon');
  const items = Object.values(em.state.promotionCodes).filter(
    (p) =>
      (code === undefined || p.code.toLowerCase() === code.toLowerCase()) &&
      (active === undefined || p.active === active) &&
      (coupon === undefined || p.promotion.coupon === coupon),
  );
  return listPage('/v1/promotion_codes', items, params);
}

export function promotionCodeOrFail(em: Emulation, id: string, param = 'id'): Obj {
  return findOrFail('promotion code', em.state.promotionCodes, id, param);
}

/** `GET /v1/promotion_codes/:id`. */
export function retrievePromotionCode(em: Emulation, id: string): Obj {
  return promotionCodeOrFail(em, id);
}

export function updatePromotionCode(em: Emulation, id: string, params: Params): Obj {
  allow(params, ['active', 'metadata']);
  const promotionCode = promotionCodeOrFail(em, id);
  const active = bool(params, 'active');
  if (active !== undefined) promotionCode.active = active;
  promotionCode.metadata = mergeMetadata(promotionCode.metadata, params);
  return promotionCode;
}

/** The reason Stripe would refuse to apply a promotion code to a price, or null when it applies. */
export function promotionCodeProblem(em: Emulation, promotionCode: Obj, price: Obj): string | null {
  const coupon = couponOrFail(em, promotionCode.promotion.coupon);
  if (!promotionCode.active) return `The promotion code \`${promotionCode.code}\` is not active.`;
  if (promotionCode.expires_at !== null && promotionCode.expires_at <= now()) {
    return `The promotion code \`${promotionCode.code}\` has expired.`;
  }
  if (
    promotionCode.max_redemptions !== null &&
    promotionCode.times_redeemed >= promotionCode.max_redemptions
  ) {
    return `The promotion code \`${promotionCode.code}\` has reached its maximum number of redemptions.`;
  }
  if (!coupon.valid) return `The coupon \`${coupon.id}\` is no longer valid.`;
  if (coupon.applies_to && !coupon.applies_to.products.includes(price.product)) {
    return `The promotion code \`${promotionCode.code}\` cannot be applied to the products in this session.`;
  }
  const { minimum_amount: minimum, minimum_amount_currency: minimumCurrency } = promotionCode.restrictions;
  if (minimum !== null && (minimumCurrency !== price.currency || price.unit_amount < minimum)) {
    return `The promotion code \`${promotionCode.code}\` requires a minimum amount of ${minimum} ${minimumCurrency}.`;
  }
  return null;
}

/** The coupon behind a discount (`{ coupon }` or `{ promotion_code }`), if it still exists. */
export function discountCoupon(em: Emulation, discount: Obj | null | undefined): Obj | undefined {
  if (!discount) return undefined;
  const couponId = discount.coupon ?? em.state.promotionCodes[discount.promotion_code]?.promotion.coupon;
  return couponId ? em.state.coupons[couponId] : undefined;
}

/** `amount` after a discount, in the currency's smallest unit. */
export function discounted(em: Emulation, amount: number, discount: Obj | null): number {
  const coupon = discountCoupon(em, discount);
  if (!coupon) return amount;
  if (coupon.percent_off !== null) return Math.round(amount * (1 - coupon.percent_off / 100));
  return Math.max(0, amount - (coupon.amount_off ?? 0));
}
