import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import {
  CreateOrganizationInput,
  OrganizationMemberType,
  OrganizationType,
  OrgRoleEnum,
} from './organization.type.js';

/** Organizations and their members (rules and permissions in OrganizationsService). */
@Resolver(() => OrganizationType)
export class OrganizationsResolver {
  @Mutation(() => OrganizationType)
  async createOrganization(
    @Arg('input', () => CreateOrganizationInput) input: CreateOrganizationInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrganizationType> {
    const organization = await ctx.services.organizations.createOrganization(ctx.principal, {
      ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined && v !== null)),
    });
    return OrganizationType.from(organization);
  }

  @Query(() => OrganizationType, {
    nullable: true,
    description: "An organization of the app (API key) or one of the session's customer",
  })
  async organization(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrganizationType | null> {
    const organization = await ctx.services.organizations.getOrganization(ctx.principal, id);
    return organization ? OrganizationType.from(organization) : null;
  }

  @Query(() => [OrganizationType], {
    description:
      "A customer's organizations: customerId with an API key, the session's own customer otherwise",
  })
  async organizations(
    @Ctx() ctx: GraphQLContext,
    @Arg('customerId', () => ID, { nullable: true }) customerId?: string | null,
  ): Promise<OrganizationType[]> {
    const query = customerId != null ? { customerId } : {};
    return (await ctx.services.organizations.listOrganizations(ctx.principal, query)).map(
      OrganizationType.from,
    );
  }

  @FieldResolver(() => [OrganizationMemberType])
  async members(@Root() organization: OrganizationType, @Ctx() ctx: GraphQLContext) {
    const members = await ctx.services.organizations.listMembers(ctx.principal, organization.id);
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
    return OrganizationMemberType.from(await ctx.services.organizations.addMember(ctx.principal, input));
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
      await ctx.services.organizations.updateMemberRole(ctx.principal, input),
    );
  }

  @Mutation(() => Boolean, { description: 'A member may also remove itself (leave)' })
  async removeOrganizationMember(
    @Arg('organizationId', () => ID) organizationId: string,
    @Arg('customerId', () => ID) customerId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<boolean> {
    await ctx.services.organizations.removeMember(ctx.principal, { organizationId, customerId });
    return true;
  }
}
