import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { CouponValidationType } from './coupon.type.js';
import type { CouponsService } from './coupons.service.js';

/** Coupon validation over the same core as `POST /v1/coupons/validate`. */
@Resolver()
export class CouponsResolver {
  constructor(private readonly couponsService: CouponsService) {}

  @Query(() => CouponValidationType, {
    description: 'Whether a promotion code can be applied to a plan at checkout, and if not, why',
  })
  async validateCoupon(
    @Arg('code') code: string,
    @Arg('planId', () => ID) planId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CouponValidationType> {
    return CouponValidationType.from(
      await this.couponsService.validateCoupon(ctx.principal, { code, planId }),
    );
  }
}
