import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { Features, Plan } from './plan.entity.js';

@ObjectType('Plan')
export class PlanType {
  @Field(() => ID, { description: "The operator's id for the plan (a slug such as `pro`)" })
  id!: string;
  @Field()
  name!: string;
  @Field(() => String, {
    nullable: true,
    description: 'The Stripe price checkout sells; null for a free plan',
  })
  stripePriceId!: string | null;
  @Field(() => Int, { description: 'Days of free trial checkout applies' })
  trialDays!: number;
  @Field(() => GraphQLJSONObject, { description: 'Feature name → boolean, number or string' })
  features!: Features;
  @Field({ description: 'The plan of anyone without an entitling subscription (at most one per app)' })
  isDefault!: boolean;

  static from(plan: Plan): PlanType {
    return Object.assign(new PlanType(), {
      id: plan.slug,
      name: plan.name,
      stripePriceId: plan.stripePriceId,
      trialDays: plan.trialDays,
      features: { ...plan.features },
      isDefault: plan.isDefault,
    });
  }
}

@InputType('PlanInput')
export class PlanInput {
  @Field(() => ID, { description: 'Slug: lowercase letters, digits, "-" and "_"' })
  id!: string;
  @Field()
  name!: string;
  @Field(() => String, { nullable: true, description: 'null for a free plan' })
  stripePriceId?: string | null;
  @Field(() => Int, { nullable: true })
  trialDays?: number;
  @Field(() => GraphQLJSONObject, { nullable: true })
  features?: Record<string, unknown>;
  @Field({ nullable: true })
  isDefault?: boolean;
}
