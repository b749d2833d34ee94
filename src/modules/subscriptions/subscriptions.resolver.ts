import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { SubscriptionType } from './subscription.type.js';

/** Reading subscriptions over the same core as `GET /v1/subscriptions/current`. */
@Resolver(() => SubscriptionType)
export class SubscriptionsResolver {
  @Query(() => SubscriptionType, {
    nullable: true,
    description:
      "The newest entitling subscription of the session's context, or with an API key of exactly one of customerId / organizationId; null when there is none",
  })
  async currentSubscription(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
  ): Promise<SubscriptionType | null> {
    const query = {
      ...(customerId != null ? { customerId } : {}),
      ...(organizationId != null ? { organizationId } : {}),
    };
    const subscription = await ctx.services.subscriptions.findCurrentSubscription(ctx.principal, query);
    return subscription ? SubscriptionType.from(subscription) : null;
  }
}
