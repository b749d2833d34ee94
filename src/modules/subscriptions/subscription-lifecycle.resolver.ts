import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { PlanChangePreviewType, ProrationBehaviorEnum, SubscriptionType } from './subscription.type.js';
import type { SubscriptionLifecycleService } from './subscription-lifecycle.service.js';

/** Cancel, pause, resume and plan changes over the same core as `POST /v1/subscriptions/:id/…`. */
@Resolver()
export class SubscriptionLifecycleResolver {
  constructor(private readonly subscriptionLifecycleService: SubscriptionLifecycleService) {}

  @Mutation(() => SubscriptionType, {
    description:
      'Cancels now (→ canceled), or with atPeriodEnd at the end of the paid period (cancelAtPeriodEnd)',
  })
  async cancelSubscription(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('atPeriodEnd', () => Boolean, { nullable: true }) atPeriodEnd?: boolean | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<SubscriptionType> {
    const input = sentArgs({ atPeriodEnd });
    return SubscriptionType.from(
      await this.subscriptionLifecycleService.cancelSubscription(ctx.principal, id, input, { appId }),
    );
  }

  @Mutation(() => SubscriptionType, {
    description: 'Pauses collection (→ paused, which grants no entitlements)',
  })
  async pauseSubscription(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<SubscriptionType> {
    return SubscriptionType.from(
      await this.subscriptionLifecycleService.pauseSubscription(ctx.principal, id, {}, { appId }),
    );
  }

  @Mutation(() => SubscriptionType, {
    description: 'Resumes a paused subscription, or withdraws a cancellation scheduled for the period end',
  })
  async resumeSubscription(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<SubscriptionType> {
    return SubscriptionType.from(
      await this.subscriptionLifecycleService.resumeSubscription(ctx.principal, id, {}, { appId }),
    );
  }

  @Mutation(() => SubscriptionType, {
    description:
      "Moves the subscription to another priced plan of the app (Stripe's item price changes, prorated " +
      'as asked; entitlements follow at once)',
  })
  async changeSubscriptionPlan(
    @Arg('id', () => ID) id: string,
    @Arg('planId', () => ID) planId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('prorationBehavior', () => ProrationBehaviorEnum, { nullable: true })
    prorationBehavior?: ProrationBehaviorEnum | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<SubscriptionType> {
    const input = sentArgs({ planId, prorationBehavior });
    return SubscriptionType.from(
      await this.subscriptionLifecycleService.changeSubscriptionPlan(ctx.principal, id, input, { appId }),
    );
  }

  @Query(() => PlanChangePreviewType, {
    description: 'What changeSubscriptionPlan with the same arguments would prorate now; changes nothing',
  })
  async previewSubscriptionPlanChange(
    @Arg('id', () => ID) id: string,
    @Arg('planId', () => ID) planId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('prorationBehavior', () => ProrationBehaviorEnum, { nullable: true })
    prorationBehavior?: ProrationBehaviorEnum | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<PlanChangePreviewType> {
    const input = sentArgs({ planId, prorationBehavior });
    return PlanChangePreviewType.from(
      await this.subscriptionLifecycleService.previewSubscriptionPlanChange(ctx.principal, id, input, {
        appId,
      }),
    );
  }
}
