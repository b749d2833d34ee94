import { Field, ObjectType } from 'type-graphql';
import type { CouponValidation } from './coupons.service.js';

@ObjectType('CouponValidation')
export class CouponValidationType {
  @Field()
  valid!: boolean;
  @Field(() => String, {
    nullable: true,
    description:
      'When not valid: Coupon code not found, Coupon expired, Coupon has reached its maximum number of ' +
      'redemptions, Coupon is no longer active, or Coupon is not valid for this plan',
  })
  reason!: string | null;

  static from(result: CouponValidation): CouponValidationType {
    return Object.assign(new CouponValidationType(), { valid: result.valid, reason: result.reason });
  }
}
