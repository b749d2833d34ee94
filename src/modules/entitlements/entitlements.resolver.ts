import { Arg, Ctx, ID, Int, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { EntitlementCheckType, EntitlementsType } from './entitlement.type.js';
import type { EntitlementsService } from './entitlements.service.js';

/** Entitlements over the same core as `/v1/entitlements…`. */
@Resolver()
export class EntitlementsResolver {
  constructor(private readonly entitlementsService: EntitlementsService) {}

  @Query(() => EntitlementsType, {
    description: "The session's context, or with an API key exactly one of customerId / organizationId",
  })
  async entitlements(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<EntitlementsType> {
    const query = sentArgs({ customerId, organizationId });
    return EntitlementsType.from(
      await this.entitlementsService.getEntitlements(ctx.principal, query, { appId }),
    );
  }

  @Query(() => EntitlementCheckType, { description: 'Whether the context may use a feature, and its value' })
  async checkEntitlement(
    @Ctx() ctx: GraphQLContext,
    @Arg('feature') feature: string,
    @Arg('amount', () => Int, {
      nullable: true,
      description: 'For a metered feature: units asked for, default 1',
    })
    amount?: number | null,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<EntitlementCheckType> {
    const query = sentArgs({ customerId, organizationId });
    return EntitlementCheckType.from(
      await this.entitlementsService.checkFeature(
        ctx.principal,
        feature,
        query,
        { appId },
        amount ?? undefined,
      ),
    );
  }
}
