import { Ctx, FieldResolver, Query, Resolver, Root } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { CustomerType } from '../customers/customer.type.js';
import type { Subscription } from './subscription.entity.js';
import { SubscriptionType } from './subscription.type.js';

/** Subscription history: `customer(id) { subscriptions }` and the session's own `subscriptions`. */
@Resolver(() => CustomerType)
export class CustomerSubscriptionsResolver {
  @FieldResolver(() => [SubscriptionType], {
    description: 'Every subscription of the customer, canceled ones included, newest first',
  })
  async subscriptions(
    @Root() customer: CustomerType,
    @Ctx() ctx: GraphQLContext,
  ): Promise<SubscriptionType[]> {
    ctx.services.subscriptionHistory.assertMayReadCustomerHistory(ctx.principal, customer.id);
    // Batched per request: a page of customers costs one query for subscriptions and one for plans.
    const subscriptions = await ctx.loaders.subscriptionsByCustomer.load(customer.id);
    await withPlans(ctx, subscriptions);
    return subscriptions.map(SubscriptionType.from);
  }

  @Query(() => [SubscriptionType], {
    name: 'subscriptions',
    description:
      "The calling session's subscription history (its organization's after a switch), canceled ones included, newest first",
  })
  async ownSubscriptions(@Ctx() ctx: GraphQLContext): Promise<SubscriptionType[]> {
    return (await ctx.services.subscriptionHistory.listOwnSubscriptions(ctx.principal)).map(
      SubscriptionType.from,
    );
  }
}

/** Loads the subscriptions' plans into the request's identity map, so each `plan` reference is filled. */
async function withPlans(ctx: GraphQLContext, subscriptions: readonly Subscription[]): Promise<void> {
  await Promise.all(subscriptions.map((subscription) => ctx.loaders.planById.load(subscription.plan.id)));
}
