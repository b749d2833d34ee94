import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { CreateCustomerInput, CustomerListType, CustomerType, UpdateCustomerInput } from './customer.type.js';
import type { CustomersService } from './customers.service.js';

/** Customers over the same core as `/v1/customers` (API key of the app only; enforced in the service). */
@Resolver(() => CustomerType)
export class CustomersResolver {
  constructor(private readonly customersService: CustomersService) {}

  @Query(() => CustomerListType, { description: 'Newest first; `email` matches case-insensitively anywhere' })
  async customers(
    @Ctx() ctx: GraphQLContext,
    @Arg('email', () => String, { nullable: true }) email?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: 'Default 20, at most 100' }) limit?:
      | number
      | null,
    @Arg('offset', () => Int, { nullable: true, description: 'Default 0' }) offset?: number | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CustomerListType> {
    const query = sentArgs({ email, limit, offset });
    const page = await this.customersService.listCustomers(ctx.principal, query, { appId });
    return CustomerListType.from(page);
  }

  @Query(() => CustomerType)
  async customer(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CustomerType> {
    return CustomerType.from(await this.customersService.getCustomer(ctx.principal, id, { appId }));
  }

  @Mutation(() => CustomerType)
  async createCustomer(
    @Arg('input', () => CreateCustomerInput) input: CreateCustomerInput,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CustomerType> {
    return CustomerType.from(
      await this.customersService.createCustomer(ctx.principal, { ...input }, { appId }),
    );
  }

  @Mutation(() => CustomerType)
  async updateCustomer(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateCustomerInput) input: UpdateCustomerInput,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CustomerType> {
    return CustomerType.from(
      await this.customersService.updateCustomer(ctx.principal, id, { ...input }, { appId }),
    );
  }
}
