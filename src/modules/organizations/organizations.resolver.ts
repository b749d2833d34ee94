import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import type { InvitationsService } from './invitations.service.js';
import {
  CreateOrganizationInput,
  InviteToOrganizationInput,
  OrganizationInvitationType,
  OrganizationMemberType,
  OrganizationSeatsType,
  OrganizationType,
  OrgRoleEnum,
} from './organization.type.js';
import type { OrganizationsService } from './organizations.service.js';

/** Organizations and their members (rules and permissions in OrganizationsService). */
@Resolver(() => OrganizationType)
export class OrganizationsResolver {
  constructor(
    private readonly organizationsService: OrganizationsService,
    private readonly invitationsService: InvitationsService,
  ) {}

  @Mutation(() => OrganizationType)
  async createOrganization(
    @Arg('input', () => CreateOrganizationInput) input: CreateOrganizationInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrganizationType> {
    const organization = await this.organizationsService.createOrganization(
      ctx.principal,
      sentArgs({ ...input }),
    );
    return OrganizationType.from(organization);
  }

  @Query(() => OrganizationType, {
    nullable: true,
    description: "An organization of the app (API key) or one of the session's customer",
  })
  async organization(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<OrganizationType | null> {
    const organization = await this.organizationsService.getOrganization(ctx.principal, id, { appId });
    return organization ? OrganizationType.from(organization, appId) : null;
  }

  @Query(() => [OrganizationType], {
    description:
      "A customer's organizations: customerId with an API key, the session's own customer otherwise",
  })
  async organizations(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<OrganizationType[]> {
    const input = sentArgs({ customerId });
    return (await this.organizationsService.listOrganizations(ctx.principal, input, { appId })).map(
      (organization) => OrganizationType.from(organization, appId),
    );
  }

  @FieldResolver(() => [OrganizationMemberType])
  async members(@Root() organization: OrganizationType, @Ctx() ctx: GraphQLContext) {
    const members = await this.organizationsService.listMembers(ctx.principal, organization.id, {
      appId: organization.scopeAppId,
    });
    return members.map(OrganizationMemberType.from);
  }

  @Mutation(() => OrganizationMemberType)
  async addOrganizationMember(
    @Arg('organizationId', () => ID) organizationId: string,
    @Arg('customerId', () => ID) customerId: string,
    @Arg('role', () => OrgRoleEnum, { defaultValue: OrgRoleEnum.member }) role: OrgRoleEnum,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrganizationMemberType> {
    const input = { organizationId, customerId, role };
    return OrganizationMemberType.from(await this.organizationsService.addMember(ctx.principal, input));
  }

  @Mutation(() => OrganizationMemberType)
  async updateOrganizationMemberRole(
    @Arg('organizationId', () => ID) organizationId: string,
    @Arg('customerId', () => ID) customerId: string,
    @Arg('role', () => OrgRoleEnum) role: OrgRoleEnum,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrganizationMemberType> {
    const input = { organizationId, customerId, role };
    return OrganizationMemberType.from(
      await this.organizationsService.updateMemberRole(ctx.principal, input),
    );
  }

  @Mutation(() => Boolean, { description: 'A member may also remove itself (leave)' })
  async removeOrganizationMember(
    @Arg('organizationId', () => ID) organizationId: string,
    @Arg('customerId', () => ID) customerId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<boolean> {
    await this.organizationsService.removeMember(ctx.principal, { organizationId, customerId });
    return true;
  }

  @Mutation(() => OrganizationInvitationType, {
    description:
      'E-mails an invitation whose link signs the invitee in and adds it as a member; it holds a seat while pending',
  })
  async inviteToOrganization(
    @Arg('organizationId', () => ID) organizationId: string,
    @Arg('input', () => InviteToOrganizationInput) input: InviteToOrganizationInput,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<OrganizationInvitationType> {
    const invitation = await this.invitationsService.invite(
      ctx.principal,
      organizationId,
      sentArgs({ ...input }),
      { appId },
    );
    return OrganizationInvitationType.from(invitation, this.invitationsService.now());
  }

  @Mutation(() => OrganizationInvitationType, {
    description: 'Revokes a pending invitation (its seat is free)',
  })
  async revokeInvitation(
    @Arg('organizationId', () => ID) organizationId: string,
    @Arg('invitationId', () => ID) invitationId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<OrganizationInvitationType> {
    const invitation = await this.invitationsService.revokeInvitation(
      ctx.principal,
      organizationId,
      invitationId,
      { appId },
    );
    return OrganizationInvitationType.from(invitation, this.invitationsService.now());
  }

  @Query(() => [OrganizationInvitationType], {
    description: "An organization's invitations, newest first (API key, owners and admins)",
  })
  async organizationInvitations(
    @Arg('organizationId', () => ID) organizationId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<OrganizationInvitationType[]> {
    const list = await this.invitationsService.listInvitations(ctx.principal, organizationId, { appId });
    const now = this.invitationsService.now();
    return list.map((invitation) => OrganizationInvitationType.from(invitation, now));
  }

  @Query(() => OrganizationSeatsType, {
    description: "An organization's seats: used, members, pending, limit",
  })
  async organizationSeats(
    @Arg('organizationId', () => ID) organizationId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<OrganizationSeatsType> {
    const seats = await this.organizationsService.getSeats(ctx.principal, organizationId, { appId });
    return OrganizationSeatsType.from(seats);
  }
}
