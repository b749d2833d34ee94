import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import type { CheckoutService } from './checkout.service.js';
import { CheckoutSessionInput, CheckoutSessionType } from './checkout.type.js';

/** `createCheckoutSession`: the same use case as `POST /v1/checkout/session`. */
@Resolver(() => CheckoutSessionType)
export class CheckoutResolver {
  constructor(private readonly checkoutService: CheckoutService) {}

  @Mutation(() => CheckoutSessionType)
  async createCheckoutSession(
    @Arg('input', () => CheckoutSessionInput) input: CheckoutSessionInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CheckoutSessionType> {
    const { url } = await this.checkoutService.createCheckoutSession(ctx.principal, sentArgs({ ...input }));
    return Object.assign(new CheckoutSessionType(), { url });
  }
}
