import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { SubscriptionType } from './subscription.type.js';
import type { SubscriptionsService } from './subscriptions.service.js';

/** Reading subscriptions over the same core as `GET /v1/subscriptions/current`. */
@Resolver(() => SubscriptionType)
export class SubscriptionsResolver {
  constructor(private readonly subscriptionsService: SubscriptionsService) {}

  @Query(() => SubscriptionType, {
    nullable: true,
    description:
      "The newest entitling subscription of the session's context, or with an API key of exactly one of customerId / organizationId; null when there is none",
  })
  async currentSubscription(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<SubscriptionType | null> {
    const query = sentArgs({ customerId, organizationId });
    const subscription = await this.subscriptionsService.findCurrentSubscription(ctx.principal, query, {
      appId,
    });
    return subscription ? SubscriptionType.from(subscription) : null;
  }
}
