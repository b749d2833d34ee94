import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, ObjectType, registerEnumType } from 'type-graphql';
import { noteCustomer } from '../../core/subjects.js';
import type { Metadata } from '../customers/customer.entity.js';
import type { Organization, OrganizationMember } from './organization.entity.js';

export enum OrgRoleEnum {
  owner = 'owner',
  admin = 'admin',
  member = 'member',
}
registerEnumType(OrgRoleEnum, {
  name: 'OrgRole',
  description: 'owner and admin manage members and billing; only an owner manages owners',
});

@ObjectType('Organization', { description: 'A B2B organization; its members share its subscription' })
export class OrganizationType {
  @Field(() => ID)
  id!: string;
  @Field()
  name!: string;
  @Field(() => GraphQLJSONObject)
  metadata!: Metadata;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  updatedAt!: Date;

  static from(organization: Organization): OrganizationType {
    return Object.assign(new OrganizationType(), {
      id: organization.id,
      name: organization.name,
      metadata: organization.metadata,
      createdAt: organization.createdAt,
      updatedAt: organization.updatedAt,
    });
  }
}

@ObjectType('OrganizationMember')
export class OrganizationMemberType {
  @Field(() => ID)
  customerId!: string;
  @Field()
  email!: string;
  @Field(() => String, { nullable: true })
  name!: string | null;
  @Field(() => OrgRoleEnum)
  role!: OrgRoleEnum;
  @Field(() => GraphQLDateTimeISO, { description: 'When the customer joined the organization' })
  createdAt!: Date;

  static from(member: OrganizationMember): OrganizationMemberType {
    noteCustomer(member.customer.id);
    return Object.assign(new OrganizationMemberType(), {
      customerId: member.customer.id,
      email: member.customer.email,
      name: member.customer.name,
      role: member.role as OrgRoleEnum,
      createdAt: member.createdAt,
    });
  }
}

@InputType('CreateOrganizationInput')
export class CreateOrganizationInput {
  @Field()
  name!: string;
  @Field(() => GraphQLJSONObject, { nullable: true })
  metadata?: Metadata;
  @Field(() => ID, {
    nullable: true,
    description: 'Required with an API key: the first owner. A session makes its own customer the owner.',
  })
  ownerCustomerId?: string;
}
