import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import {
  CreateOrganizationInput,
  OrganizationMemberType,
  OrganizationType,
  OrgRoleEnum,
} from './organization.type.js';
import type { OrganizationsService } from './organizations.service.js';

/** Organizations and their members (rules and permissions in OrganizationsService). */
@Resolver(() => OrganizationType)
export class OrganizationsResolver {
  constructor(private readonly organizationsService: OrganizationsService) {}

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
  ): Promise<OrganizationType | null> {
    const organization = await this.organizationsService.getOrganization(ctx.principal, id);
    return organization ? OrganizationType.from(organization) : null;
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
      OrganizationType.from,
    );
  }

  @FieldResolver(() => [OrganizationMemberType])
  async members(@Root() organization: OrganizationType, @Ctx() ctx: GraphQLContext) {
    const members = await this.organizationsService.listMembers(ctx.principal, organization.id);
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
}
