import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { CouponValidationType } from './coupon.type.js';

/** Coupon validation (GraphQL only: the interface shows no HTTP path for it). */
@Resolver()
export class CouponsResolver {
  @Query(() => CouponValidationType, {
    description: 'Whether a promotion code can be applied to a plan at checkout, and if not, why',
  })
  async validateCoupon(
    @Arg('code') code: string,
    @Arg('planId', () => ID) planId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CouponValidationType> {
    return CouponValidationType.from(
      await ctx.services.coupons.validateCoupon(ctx.principal, { code, planId }),
    );
  }
}
