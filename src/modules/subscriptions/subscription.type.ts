import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { PlanType } from '../plans/plan.type.js';
import type { Subscription } from './subscription.entity.js';
import type { PlanChangePreview } from './subscription-lifecycle.service.js';

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

export enum ProrationBehaviorEnum {
  create_prorations = 'create_prorations',
  none = 'none',
  always_invoice = 'always_invoice',
}
registerEnumType(ProrationBehaviorEnum, {
  name: 'ProrationBehavior',
  description:
    "How Stripe charges a plan change for the rest of the period (Stripe's words): prorated on the next " +
    'invoice, not at all, or invoiced at once',
});

@ObjectType('PlanChangePreview', {
  description: "What a plan change would prorate now, from Stripe's preview of the next invoice",
})
export class PlanChangePreviewType {
  @Field(() => ID, { description: 'The target plan' })
  planId!: string;
  @Field(() => ProrationBehaviorEnum)
  prorationBehavior!: ProrationBehaviorEnum;
  @Field(() => Int, { description: 'Minor units of currency; negative for a credit' })
  amount!: number;
  @Field()
  currency!: string;

  static from(preview: PlanChangePreview): PlanChangePreviewType {
    return Object.assign(new PlanChangePreviewType(), {
      ...preview,
      prorationBehavior: preview.prorationBehavior as ProrationBehaviorEnum,
    });
  }
}
