import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { APP_ID_ARG } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import type { CustomerErasureService } from './customer-erasure.service.js';
import { DeletedCustomerType } from './customer-erasure.type.js';

/** `deleteCustomer`, over the same core as `DELETE /v1/customers/:id`. */
@Resolver()
export class CustomerErasureResolver {
  constructor(private readonly erasure: CustomerErasureService) {}

  @Mutation(() => DeletedCustomerType, {
    description:
      'Deletes a customer: cancels its subscriptions at Stripe, ends its sessions and memberships, and erases its personal data',
  })
  async deleteCustomer(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<DeletedCustomerType> {
    return DeletedCustomerType.from(await this.erasure.deleteCustomer(ctx.principal, id, { appId }));
  }
}
