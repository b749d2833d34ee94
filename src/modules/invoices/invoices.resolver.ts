import { Arg, Ctx, ID, Int, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { InvoiceType } from './invoice.type.js';
import type { InvoicesService } from './invoices.service.js';

/** Invoice history (GraphQL only: the interface shows no HTTP path for it). */
@Resolver()
export class InvoicesResolver {
  constructor(private readonly invoicesService: InvoicesService) {}

  @Query(() => [InvoiceType], {
    description:
      "A customer's invoices from Stripe, newest first: with an API key name customerId, with a session " +
      'its own. Empty for a customer never linked to Stripe.',
  })
  async invoices(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: 'Default 20, at most 100' }) limit?:
      | number
      | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<InvoiceType[]> {
    const input = sentArgs({ customerId, limit });
    return (await this.invoicesService.listInvoices(ctx.principal, input, { appId })).map(InvoiceType.from);
  }
}
