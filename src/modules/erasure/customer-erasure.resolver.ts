import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import type { CustomerErasureService } from './customer-erasure.service.js';
import { DeletedCustomerType } from './customer-erasure.type.js';

/** `deleteCustomer`, over the same core as `DELETE /v1/customers/:id`. */
@Resolver()
export class CustomerErasureResolver {
  constructor(private readonly erasure: CustomerErasureService) {}

  @Mutation(() => DeletedCustomerType, {
    description:
      'Deletes a customer: cancels its subscriptions at Stripe, ends its sessions and memberships, and erases its personal data (API key)',
  })
  async deleteCustomer(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<DeletedCustomerType> {
    return DeletedCustomerType.from(await this.erasure.deleteCustomer(ctx.principal, id));
  }
}
