import { GraphQLJSON, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ObjectType } from 'type-graphql';
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
  @Field({ description: 'true when the value is true, a number above 0 or a non-empty string' })
  allowed!: boolean;
  @Field(() => GraphQLJSON, { nullable: true, description: 'null when the plan does not have the feature' })
  value!: FeatureValue | null;

  static from(check: FeatureCheck): EntitlementCheckType {
    return Object.assign(new EntitlementCheckType(), check);
  }
}
