import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, ObjectType } from 'type-graphql';
import { PlanType } from '../plans/plan.type.js';
import type { Subscription } from './subscription.entity.js';

@ObjectType('Subscription', {
  description: "A customer's or organization's subscription, mirrored from Stripe",
})
export class SubscriptionType {
  @Field(() => ID)
  id!: string;
  @Field(() => ID, { nullable: true })
  customerId!: string | null;
  @Field(() => ID, { nullable: true })
  organizationId!: string | null;
  @Field(() => PlanType)
  plan!: PlanType;
  @Field({ description: "Stripe's words: trialing, active, past_due, paused, canceled, …" })
  status!: string;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  currentPeriodEnd!: Date | null;
  @Field()
  cancelAtPeriodEnd!: boolean;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  trialEnd!: Date | null;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  canceledAt!: Date | null;
  @Field(() => GraphQLJSONObject, { description: 'The checkout metadata' })
  metadata!: Record<string, unknown>;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  updatedAt!: Date;

  /** Needs `plan` loaded. */
  static from(subscription: Subscription): SubscriptionType {
    return Object.assign(new SubscriptionType(), {
      id: subscription.id,
      customerId: subscription.customer?.id ?? null,
      organizationId: subscription.organization?.id ?? null,
      plan: PlanType.from(subscription.plan),
      status: subscription.status,
      currentPeriodEnd: subscription.currentPeriodEnd,
      cancelAtPeriodEnd: subscription.cancelAtPeriodEnd,
      trialEnd: subscription.trialEnd,
      canceledAt: subscription.canceledAt,
      metadata: { ...subscription.metadata },
      createdAt: subscription.createdAt,
      updatedAt: subscription.updatedAt,
    });
  }
}
