import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import type { EntitlementTokensService } from './entitlement-tokens.service.js';
import { EntitlementSigningKeyType } from './signing-key.type.js';

/** The admin's operations on an app's entitlement-token signing keys (enforced in the service). */
@Resolver()
export class EntitlementTokensResolver {
  constructor(private readonly tokens: EntitlementTokensService) {}

  @Query(() => [EntitlementSigningKeyType], {
    description: "Admin token only: the app's published entitlement-token signing keys",
  })
  async entitlementSigningKeys(
    @Arg('appId', () => ID) appId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<EntitlementSigningKeyType[]> {
    return (await this.tokens.listSigningKeys(ctx.principal, appId)).map(EntitlementSigningKeyType.from);
  }

  @Mutation(() => EntitlementSigningKeyType, {
    description:
      'Admin token only: publishes a new signing key at once; it signs after a 10-minute grace, and the older keys leave the JWKS after the longest token lifetime',
  })
  async rotateEntitlementSigningKey(
    @Arg('appId', () => ID) appId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<EntitlementSigningKeyType> {
    return EntitlementSigningKeyType.from(await this.tokens.rotate(ctx.principal, appId));
  }

  @Mutation(() => EntitlementSigningKeyType, {
    description:
      'Admin token only: removes a signing key from the JWKS and stops signing with it at once (a leaked key)',
  })
  async revokeEntitlementSigningKey(
    @Arg('appId', () => ID) appId: string,
    @Arg('kid', () => ID) kid: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<EntitlementSigningKeyType> {
    return EntitlementSigningKeyType.from(await this.tokens.revoke(ctx.principal, appId, kid));
  }
}
