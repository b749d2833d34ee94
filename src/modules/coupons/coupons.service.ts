import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { NotFoundError } from '../../core/errors.js';
import { type Principal, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import type { PaymentProvider } from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';
import { type CouponReason, couponProblem } from './coupon-rules.js';
import { validateCouponSchema } from './coupons.schemas.js';

export interface CouponValidation {
  readonly valid: boolean;
  /** Why the code cannot be used for the plan; null when it can. */
  readonly reason: CouponReason | null;
}

/**
 * Whether a promotion code would be accepted for a plan at checkout, asked of Stripe at call time.
 * For an API key or a customer session of the plan's app; an unknown plan is a 404, a code that cannot
 * be used is an answer (`valid: false` with the reason), not an error.
 */
export class CouponsService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly payments: PaymentProvider,
  ) {}

  async validateCoupon(principal: Principal, input: unknown): Promise<CouponValidation> {
    const { appId } = requireAppPrincipal(principal);
    const { code, planId } = parseInput(validateCouponSchema, input);
    const plan = await this.orm.em.findOne(Plan, { app: appId, slug: planId });
    if (!plan) throw new NotFoundError('Plan', planId);
    const [promotionCode, price] = await Promise.all([
      this.payments.findPromotionCode(code),
      plan.stripePriceId ? this.payments.retrievePrice(plan.stripePriceId) : null,
    ]);
    const reason = couponProblem(promotionCode, price, Math.floor(this.clock.now().getTime() / 1000));
    return { valid: reason === null, reason };
  }
}
