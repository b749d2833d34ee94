import { Arg, Ctx, ID, Int, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { InvoiceType } from './invoice.type.js';
import type { InvoicesService } from './invoices.service.js';

/** Invoice history over the same core as `GET /v1/invoices`. */
@Resolver()
export class InvoicesResolver {
  constructor(private readonly invoicesService: InvoicesService) {}

  @Query(() => [InvoiceType], {
    description:
      'Invoices from Stripe, newest first: with an API key name exactly one of customerId / organizationId, ' +
      "with a session its own context (its organization's after a switch). Empty when never linked to Stripe.",
  })
  async invoices(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: 'Default 20, at most 100' }) limit?:
      | number
      | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<InvoiceType[]> {
    const input = sentArgs({ customerId, organizationId, limit });
    return (await this.invoicesService.listInvoices(ctx.principal, input, { appId })).map(InvoiceType.from);
  }
}
