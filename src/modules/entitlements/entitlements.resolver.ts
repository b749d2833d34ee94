import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { EntitlementCheckType, EntitlementsType } from './entitlement.type.js';

/** Drops arguments that were not sent, so the core sees the same query as `/v1/entitlements`. */
function contextQuery(customerId?: string | null, organizationId?: string | null): Record<string, string> {
  return {
    ...(customerId != null ? { customerId } : {}),
    ...(organizationId != null ? { organizationId } : {}),
  };
}

/** Entitlements over the same core as `/v1/entitlements…`. */
@Resolver()
export class EntitlementsResolver {
  @Query(() => EntitlementsType, {
    description: "The session's context, or with an API key exactly one of customerId / organizationId",
  })
  async entitlements(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
  ): Promise<EntitlementsType> {
    const query = contextQuery(customerId, organizationId);
    return EntitlementsType.from(await ctx.services.entitlements.getEntitlements(ctx.principal, query));
  }

  @Query(() => EntitlementCheckType, { description: 'Whether the context may use a feature, and its value' })
  async checkEntitlement(
    @Ctx() ctx: GraphQLContext,
    @Arg('feature') feature: string,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('organizationId', () => ID, { nullable: true }) organizationId?: string | null,
  ): Promise<EntitlementCheckType> {
    const query = contextQuery(customerId, organizationId);
    return EntitlementCheckType.from(
      await ctx.services.entitlements.checkFeature(ctx.principal, feature, query),
    );
  }
}
