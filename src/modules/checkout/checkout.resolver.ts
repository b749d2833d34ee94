import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { CheckoutSessionInput, CheckoutSessionType } from './checkout.type.js';

/** `createCheckoutSession`: the same use case as `POST /v1/checkout/session`. */
@Resolver(() => CheckoutSessionType)
export class CheckoutResolver {
  @Mutation(() => CheckoutSessionType)
  async createCheckoutSession(
    @Arg('input', () => CheckoutSessionInput) input: CheckoutSessionInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CheckoutSessionType> {
    // GraphQL hands absent optional fields over as undefined or null; the core treats both as absent.
    const body = Object.fromEntries(
      Object.entries({ ...input }).filter(([, value]) => value !== undefined && value !== null),
    );
    const { url } = await ctx.services.checkout.createCheckoutSession(ctx.principal, body);
    return Object.assign(new CheckoutSessionType(), { url });
  }
}
