import { Arg, Ctx, FieldResolver, ID, Query, Resolver, Root } from 'type-graphql';
import { sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { CustomerType } from '../customers/customer.type.js';
import { SubscriptionType } from './subscription.type.js';
import type { SubscriptionHistoryService } from './subscription-history.service.js';

/** Subscription history: `customer(id) { subscriptions }` and `subscriptions` (a session's own, or an API key's named context). */
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
      "Subscription history, canceled ones included, newest first: the calling session's own context (its organization's after a switch), or with an API key of exactly one of customerId / organizationId",
  })
  async ownSubscriptions(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
  ): Promise<SubscriptionType[]> {
    const query = sentArgs({ customerId, organizationId });
    return (await this.subscriptionHistoryService.listSubscriptions(ctx.principal, query)).map(
      SubscriptionType.from,
    );
  }
}
