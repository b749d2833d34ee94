import { Arg, Ctx, Field, ID, Mutation, ObjectType, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { SubscriptionType } from './subscription.type.js';
import type { SubscriptionReconcileService, SyncResult } from './subscription-reconcile.service.js';

@ObjectType('SkippedSubscription', { description: 'A Stripe subscription a sync did not import, and why' })
export class SkippedSubscriptionType {
  @Field()
  stripeSubscriptionId!: string;
  @Field()
  reason!: string;
}

@ObjectType('SubscriptionSync', {
  description: "A context's subscriptions after re-reading them from Stripe",
})
export class SubscriptionSyncType {
  @Field(() => [SubscriptionType], { description: 'Newest first' })
  subscriptions!: SubscriptionType[];
  @Field(() => [SkippedSubscriptionType])
  skipped!: SkippedSubscriptionType[];

  static from(result: SyncResult): SubscriptionSyncType {
    return Object.assign(new SubscriptionSyncType(), {
      subscriptions: result.subscriptions.map((s) => SubscriptionType.from(s)),
      skipped: result.skipped.map((s) => Object.assign(new SkippedSubscriptionType(), s)),
    });
  }
}

/** The twins of `POST /v1/customers/:id/sync` and `POST /v1/organizations/:id/sync`. */
@Resolver()
export class SubscriptionReconcileResolver {
  constructor(private readonly subscriptionReconcileService: SubscriptionReconcileService) {}

  @Mutation(() => SubscriptionSyncType, {
    description: "Re-reads the customer's Stripe subscriptions and applies them (API key)",
  })
  async syncCustomerSubscriptions(
    @Arg('customerId', () => ID) customerId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<SubscriptionSyncType> {
    return SubscriptionSyncType.from(
      await this.subscriptionReconcileService.syncCustomer(ctx.principal, customerId),
    );
  }

  @Mutation(() => SubscriptionSyncType, {
    description: "Re-reads the organization's Stripe subscriptions and applies them (API key)",
  })
  async syncOrganizationSubscriptions(
    @Arg('organizationId', () => ID) organizationId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<SubscriptionSyncType> {
    return SubscriptionSyncType.from(
      await this.subscriptionReconcileService.syncOrganization(ctx.principal, organizationId),
    );
  }
}
