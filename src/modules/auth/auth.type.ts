import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, ObjectType } from 'type-graphql';
import type { Customer, Metadata } from '../customers/customer.entity.js';
import type { Entitlements } from '../entitlements/entitlements.service.js';
import type { VerifiedLogin } from './magic-links.service.js';
import type { SessionView } from './sessions.service.js';

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

  static from(customer: Customer): SessionCustomerType {
    return Object.assign(new SessionCustomerType(), {
      id: customer.id,
      email: customer.email,
      name: customer.name,
      metadata: customer.metadata,
    });
  }
}

@ObjectType('SessionEntitlements', {
  description: 'What the session context (customer or organization) may use',
})
export class SessionEntitlementsType {
  @Field(() => String, {
    nullable: true,
    description: 'null when there is neither a subscription nor a default plan',
  })
  planName!: string | null;
  @Field(() => GraphQLJSONObject, { description: 'Feature keys → boolean, number or string' })
  features!: Record<string, unknown>;

  static from(entitlements: Entitlements): SessionEntitlementsType {
    return Object.assign(new SessionEntitlementsType(), {
      planName: entitlements.planName,
      features: { ...entitlements.features },
    });
  }
}

@ObjectType('Session', { description: 'The customer session a session token stands for' })
export class SessionType {
  @Field(() => SessionCustomerType)
  customer!: SessionCustomerType;
  @Field(() => SessionEntitlementsType)
  entitlements!: SessionEntitlementsType;
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
      entitlements: SessionEntitlementsType.from(view.entitlements),
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
  @Field(() => SessionEntitlementsType)
  entitlements!: SessionEntitlementsType;

  static from(login: VerifiedLogin): VerifyMagicLinkPayload {
    return Object.assign(new VerifyMagicLinkPayload(), {
      sessionToken: login.sessionToken,
      customer: SessionCustomerType.from(login.customer),
      entitlements: SessionEntitlementsType.from(login.entitlements),
    });
  }
}
