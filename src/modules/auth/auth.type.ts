import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, ObjectType } from 'type-graphql';
import { noteCustomer } from '../../core/subjects.js';
import type { Metadata } from '../customers/customer.entity.js';
import { EntitlementsType } from '../entitlements/entitlement.type.js';
import { OrgRoleEnum } from '../organizations/organization.type.js';
import type { VerifiedLogin } from './magic-links.service.js';
import type { SessionCustomer, SessionView, SwitchedSession } from './sessions.service.js';

@ObjectType('SessionCustomer', { description: 'The customer a session stands for' })
export class SessionCustomerType {
  @Field(() => ID)
  id!: string;
  @Field()
  email!: string;
  @Field(() => String, { nullable: true })
  name!: string | null;
  @Field(() => GraphQLJSONObject)
  metadata!: Metadata;

  static from(customer: SessionCustomer): SessionCustomerType {
    noteCustomer(customer.id);
    return Object.assign(new SessionCustomerType(), {
      id: customer.id,
      email: customer.email,
      name: customer.name,
      metadata: customer.metadata,
    });
  }
}

@ObjectType('Session', { description: 'The customer session a session token stands for' })
export class SessionType {
  @Field(() => SessionCustomerType)
  customer!: SessionCustomerType;
  @Field(() => EntitlementsType)
  entitlements!: EntitlementsType;
  @Field(() => ID, { nullable: true, description: 'Set only in an organization context' })
  organizationId?: string;
  @Field(() => String, {
    nullable: true,
    description: 'owner, admin or member; set only in an organization context',
  })
  orgRole?: string;

  static from(view: SessionView): SessionType {
    return Object.assign(new SessionType(), {
      customer: SessionCustomerType.from(view.customer),
      entitlements: EntitlementsType.from(view.entitlements),
      organizationId: view.organizationId,
      orgRole: view.orgRole,
    });
  }
}

@ObjectType('VerifyMagicLinkPayload')
export class VerifyMagicLinkPayload {
  @Field({ description: 'The customer session token (tg_st_…): send it as `Authorization: Bearer …`' })
  sessionToken!: string;
  @Field(() => SessionCustomerType)
  customer!: SessionCustomerType;
  @Field(() => EntitlementsType)
  entitlements!: EntitlementsType;

  static from(login: VerifiedLogin): VerifyMagicLinkPayload {
    return Object.assign(new VerifyMagicLinkPayload(), {
      sessionToken: login.sessionToken,
      customer: SessionCustomerType.from(login.customer),
      entitlements: EntitlementsType.from(login.entitlements),
    });
  }
}

@ObjectType('SwitchOrganizationPayload')
export class SwitchOrganizationPayload {
  @Field({ description: 'A new session token in the organization context. Shown once: store it now.' })
  sessionToken!: string;
  @Field(() => ID)
  organizationId!: string;
  @Field(() => OrgRoleEnum)
  orgRole!: OrgRoleEnum;
  @Field(() => EntitlementsType, { description: "The organization's entitlements" })
  entitlements!: EntitlementsType;
  @Field(() => GraphQLDateTimeISO)
  expiresAt!: Date;

  static from(switched: SwitchedSession): SwitchOrganizationPayload {
    return Object.assign(new SwitchOrganizationPayload(), {
      sessionToken: switched.sessionToken,
      organizationId: switched.organizationId,
      orgRole: switched.orgRole as OrgRoleEnum,
      entitlements: EntitlementsType.from(switched.entitlements),
      expiresAt: switched.expiresAt,
    });
  }
}
