import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import type { MeteringService } from './metering.service.js';
import {
  BalanceType,
  CreateCreditGrantInput,
  CreditGrantType,
  RecordUsageInput,
  UsageResultType,
} from './metering.type.js';

/** Metered features over the same core as `/v1/usage…`, `/v1/credit-grants…` and `/v1/balances`. */
@Resolver()
export class MeteringResolver {
  constructor(private readonly metering: MeteringService) {}

  @Mutation(() => UsageResultType, {
    description: 'Atomic check-and-consume: records the usage when the balance holds it, else nothing',
  })
  async recordUsage(
    @Ctx() ctx: GraphQLContext,
    @Arg('input', () => RecordUsageInput) input: RecordUsageInput,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<UsageResultType> {
    return UsageResultType.from(
      await this.metering.recordUsage(ctx.principal, sentArgs({ ...input }), { appId }),
    );
  }

  @Mutation(() => BalanceType, { description: 'Gives a usage back to the buckets that paid it (once)' })
  async refundUsage(
    @Ctx() ctx: GraphQLContext,
    @Arg('id', () => ID) id: string,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<BalanceType> {
    return BalanceType.from(await this.metering.refundUsage(ctx.principal, id, { appId }));
  }

  @Mutation(() => CreditGrantType)
  async createCreditGrant(
    @Ctx() ctx: GraphQLContext,
    @Arg('input', () => CreateCreditGrantInput) input: CreateCreditGrantInput,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CreditGrantType> {
    return CreditGrantType.from(
      await this.metering.createGrant(ctx.principal, sentArgs({ ...input }), { appId }),
    );
  }

  @Mutation(() => CreditGrantType, { description: "Removes a grant's unspent part (once)" })
  async voidCreditGrant(
    @Ctx() ctx: GraphQLContext,
    @Arg('id', () => ID) id: string,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CreditGrantType> {
    return CreditGrantType.from(await this.metering.voidGrant(ctx.principal, id, { appId }));
  }

  @Query(() => [CreditGrantType], { description: "A customer's or organization's grants, newest first" })
  async creditGrants(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<CreditGrantType[]> {
    const grants = await this.metering.listGrants(ctx.principal, sentArgs({ customerId, organizationId }), {
      appId,
    });
    return grants.map((g) => CreditGrantType.from(g));
  }

  @Query(() => [BalanceType], {
    description:
      "Every metered feature's live balance: the session's context, or with an API key exactly one of customerId / organizationId",
  })
  async balances(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<BalanceType[]> {
    const balances = await this.metering.getBalances(
      ctx.principal,
      sentArgs({ customerId, organizationId }),
      {
        appId,
      },
    );
    return balances.map((b) => BalanceType.from(b));
  }
}
