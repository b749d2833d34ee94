import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import type { BillingPortalService } from './billing-portal.service.js';
import { BillingPortalSessionType } from './billing-portal.type.js';

/** `createBillingPortalSession`: the same use case as `POST /v1/billing-portal/session`. */
@Resolver(() => BillingPortalSessionType)
export class BillingPortalResolver {
  constructor(private readonly billingPortalService: BillingPortalService) {}

  @Mutation(() => BillingPortalSessionType, {
    description:
      "A Stripe customer portal link. API key: exactly one of customerId / organizationId; a customer session opens its own context, and returnUrl must match the app's allowed callback URL patterns",
  })
  async createBillingPortalSession(
    @Arg('returnUrl') returnUrl: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
  ): Promise<BillingPortalSessionType> {
    const { url } = await this.billingPortalService.createPortalSession(
      ctx.principal,
      sentArgs({ returnUrl, customerId, organizationId }),
    );
    return Object.assign(new BillingPortalSessionType(), { url });
  }
}
