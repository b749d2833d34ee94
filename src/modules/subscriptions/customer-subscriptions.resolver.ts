import { Ctx, FieldResolver, Query, Resolver, Root } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { CustomerType } from '../customers/customer.type.js';
import { SubscriptionType } from './subscription.type.js';
import type { SubscriptionHistoryService } from './subscription-history.service.js';

/** Subscription history: `customer(id) { subscriptions }` and the session's own `subscriptions`. */
@Resolver(() => CustomerType)
export class CustomerSubscriptionsResolver {
  constructor(private readonly subscriptionHistoryService: SubscriptionHistoryService) {}

  @FieldResolver(() => [SubscriptionType], {
    description: 'Every subscription of the customer, canceled ones included, newest first',
  })
  async subscriptions(
    @Root() customer: CustomerType,
    @Ctx() ctx: GraphQLContext,
  ): Promise<SubscriptionType[]> {
    this.subscriptionHistoryService.assertMayReadCustomerHistory(ctx.principal, customer.id);
    // Batched per request: a page of customers costs one query for subscriptions and one for plans.
    const subscriptions = await ctx.loaders
      .get('subscriptionsByCustomer', (ids: readonly string[]) =>
        this.subscriptionHistoryService.historiesOfCustomers(ctx.principal, ids),
      )
      .load(customer.id);
    // Loads the plans into the request's identity map, so each subscription's `plan` reference is filled.
    const plans = ctx.loaders.get('planById', (ids: readonly string[]) =>
      this.subscriptionHistoryService.plansByIds(ctx.principal, ids),
    );
    await Promise.all(subscriptions.map((subscription) => plans.load(subscription.plan.id)));
    return subscriptions.map(SubscriptionType.from);
  }

  @Query(() => [SubscriptionType], {
    name: 'subscriptions',
    description:
      "The calling session's subscription history (its organization's after a switch), canceled ones included, newest first",
  })
  async ownSubscriptions(@Ctx() ctx: GraphQLContext): Promise<SubscriptionType[]> {
    return (await this.subscriptionHistoryService.listOwnSubscriptions(ctx.principal)).map(
      SubscriptionType.from,
    );
  }
}
