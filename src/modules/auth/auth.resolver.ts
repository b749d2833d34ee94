import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { SessionType, SwitchOrganizationPayload, VerifyMagicLinkPayload } from './auth.type.js';
import type { MagicLinksService } from './magic-links.service.js';
import type { SessionsService } from './sessions.service.js';

/** Customer login and sessions over the same core as `/v1/apps/:appId/auth/…`. */
@Resolver()
export class AuthResolver {
  constructor(
    private readonly magicLinksService: MagicLinksService,
    private readonly sessionsService: SessionsService,
  ) {}

  @Mutation(() => Boolean, {
    description:
      'E-mails a single-use login link leading to redirectUrl (which must match an allowed callback URL). ' +
      'Answers true whether or not the address belongs to a customer.',
  })
  async requestMagicLink(
    @Arg('appId', () => ID) appId: string,
    @Arg('email') email: string,
    @Arg('redirectUrl') redirectUrl: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<boolean> {
    await this.magicLinksService.requestMagicLink(ctx.principal, appId, { email, redirectUrl });
    return true;
  }

  @Mutation(() => VerifyMagicLinkPayload, {
    description: 'Exchanges a magic-link token (once) for a session',
  })
  async verifyMagicLink(
    @Arg('appId', () => ID) appId: string,
    @Arg('token') token: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<VerifyMagicLinkPayload> {
    return VerifyMagicLinkPayload.from(
      await this.magicLinksService.verifyMagicLink(ctx.principal, appId, { token }),
    );
  }

  @Query(() => SessionType, { description: 'The calling customer session (session token of this app only)' })
  async session(@Arg('appId', () => ID) appId: string, @Ctx() ctx: GraphQLContext): Promise<SessionType> {
    return SessionType.from(await this.sessionsService.getSession(ctx.principal, appId));
  }

  @Mutation(() => Boolean, {
    description: 'Ends the calling customer session; its token is refused from now on',
  })
  async revokeSession(@Ctx() ctx: GraphQLContext): Promise<boolean> {
    await this.sessionsService.revokeSession(ctx.principal);
    return true;
  }

  @Mutation(() => SwitchOrganizationPayload, {
    description: 'A new session token in an organization context of the calling customer',
  })
  async switchOrganization(
    @Arg('organizationId', () => ID) organizationId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<SwitchOrganizationPayload> {
    return SwitchOrganizationPayload.from(
      await this.sessionsService.switchOrganization(ctx.principal, { organizationId }),
    );
  }
}
