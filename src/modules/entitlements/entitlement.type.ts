import { GraphQLJSON, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ObjectType } from 'type-graphql';
import { BalanceType } from '../metering/metering.type.js';
import type { Features, FeatureValue } from '../plans/plan.entity.js';
import type { Entitlements, FeatureCheck } from './entitlements.service.js';

@ObjectType('Entitlements', { description: 'What a context (customer or organization) may use' })
export class EntitlementsType {
  @Field(() => String, {
    nullable: true,
    description: 'null when there is neither subscription nor default plan',
  })
  planName!: string | null;
  @Field(() => GraphQLJSONObject, { description: 'Feature keys → boolean, number or string' })
  features!: Features;

  static from(entitlements: Entitlements): EntitlementsType {
    return Object.assign(new EntitlementsType(), {
      planName: entitlements.planName,
      features: { ...entitlements.features },
    });
  }
}

@ObjectType('EntitlementCheck')
export class EntitlementCheckType {
  @Field()
  feature!: string;
  @Field({
    description:
      'true when the value is true, a number above 0 or a non-empty string; for a metered feature, when the balance holds the amount asked for',
  })
  allowed!: boolean;
  @Field(() => GraphQLJSON, {
    nullable: true,
    description: "null when the plan does not have the feature; a metered feature's limit",
  })
  value!: FeatureValue | null;
  @Field(() => BalanceType, { nullable: true, description: "A metered feature's live balance; else null" })
  balance!: BalanceType | null;

  static from(check: FeatureCheck): EntitlementCheckType {
    return Object.assign(new EntitlementCheckType(), {
      feature: check.feature,
      allowed: check.allowed,
      value: check.value,
      balance: check.balance ? BalanceType.from(check.balance) : null,
    });
  }
}
