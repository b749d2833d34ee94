import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { noteCustomer } from '../../core/subjects.js';
import type { Metadata } from '../customers/customer.entity.js';
import type { OrganizationInvitation } from './invitation.entity.js';
import type { Organization, OrganizationMember } from './organization.entity.js';
import { invitationStatus, presentSeats } from './organization.presenter.js';
import type { SeatUsage } from './seats.js';

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
  /** The app the operator named to read it (not a field): its members are read acting on that app too. */
  scopeAppId?: string | null;

  static from(organization: Organization, scopeAppId?: string | null): OrganizationType {
    return Object.assign(new OrganizationType(), {
      scopeAppId,
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

export enum InvitationStatusEnum {
  pending = 'pending',
  accepted = 'accepted',
  revoked = 'revoked',
  expired = 'expired',
}
registerEnumType(InvitationStatusEnum, {
  name: 'InvitationStatus',
  description: 'A pending invitation holds a seat until it is accepted, revoked or expires',
});

@ObjectType('OrganizationInvitation', { description: 'An e-mailed invitation into an organization' })
export class OrganizationInvitationType {
  @Field(() => ID)
  id!: string;
  @Field()
  email!: string;
  @Field(() => OrgRoleEnum)
  role!: OrgRoleEnum;
  @Field(() => InvitationStatusEnum)
  status!: InvitationStatusEnum;
  @Field(() => GraphQLDateTimeISO)
  expiresAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;

  static from(invitation: OrganizationInvitation, now: Date): OrganizationInvitationType {
    noteCustomer(invitation.customer?.id);
    return Object.assign(new OrganizationInvitationType(), {
      id: invitation.id,
      email: invitation.email,
      role: invitation.role as OrgRoleEnum,
      status: invitationStatus(invitation, now) as InvitationStatusEnum,
      expiresAt: invitation.expiresAt,
      createdAt: invitation.createdAt,
    });
  }
}

@InputType('InviteToOrganizationInput')
export class InviteToOrganizationInput {
  @Field()
  email!: string;
  @Field(() => OrgRoleEnum, { nullable: true, description: 'Default member; only an owner invites an owner' })
  role?: OrgRoleEnum;
  @Field({ description: "Where the e-mailed link leads: must match the app's callback URL patterns" })
  redirectUrl!: string;
}

@ObjectType('OrganizationSeats', { description: 'Seats used: members plus pending invitations' })
export class OrganizationSeatsType {
  @Field(() => Int)
  used!: number;
  @Field(() => Int)
  members!: number;
  @Field(() => Int)
  pending!: number;
  @Field(() => Int, { nullable: true, description: "The plan's seat limit; null when it sets none" })
  limit!: number | null;
  @Field(() => Int, { nullable: true, description: 'The billed quantity of a per-seat subscription' })
  quantity!: number | null;
  @Field({ description: 'More seats used than the limit: new members are refused until under it' })
  overLimit!: boolean;

  static from(seats: SeatUsage): OrganizationSeatsType {
    return Object.assign(new OrganizationSeatsType(), presentSeats(seats));
  }
}
