import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, ObjectType } from 'type-graphql';
import type { AuditPage } from './audit.service.js';
import type { AuditEvent } from './audit-event.entity.js';

@ObjectType('AuditActor', { description: 'Who made a write' })
export class AuditActorType {
  @Field({ description: 'operator, api_key or admin_token' })
  type!: string;
  @Field(() => ID, {
    nullable: true,
    description: "The operator's or API key's id; null for the admin token",
  })
  id!: string | null;
  @Field(() => String, { nullable: true, description: "The operator's e-mail" })
  email!: string | null;
}

@ObjectType('AuditEvent', { description: 'One audited write' })
export class AuditEventType {
  @Field(() => ID)
  id!: string;
  @Field({ description: 'e.g. customer.update' })
  action!: string;
  @Field(() => ID, { nullable: true })
  targetId!: string | null;
  @Field(() => ID, { nullable: true, description: 'None for writes outside any app (operators)' })
  appId!: string | null;
  @Field(() => AuditActorType)
  actor!: AuditActorType;
  @Field(() => GraphQLDateTimeISO)
  at!: Date;
  @Field(() => String, { nullable: true })
  ip!: string | null;
  @Field(() => String, { nullable: true })
  userAgent!: string | null;
  @Field(() => GraphQLJSONObject, {
    description:
      'Changed fields: { field: { before, after } }; secrets show as "[redacted]", never their value',
  })
  changes!: Record<string, unknown>;

  static from(event: AuditEvent): AuditEventType {
    return Object.assign(new AuditEventType(), {
      id: event.id,
      action: event.action,
      targetId: event.targetId,
      appId: event.appId,
      actor: Object.assign(new AuditActorType(), {
        type: event.actorType,
        id: event.actorId,
        email: event.actorEmail,
      }),
      at: event.at,
      ip: event.ip,
      userAgent: event.userAgent,
      changes: event.changes ?? {},
    });
  }
}

@ObjectType('AuditEventEdge')
export class AuditEventEdgeType {
  @Field(() => AuditEventType)
  node!: AuditEventType;
  @Field()
  cursor!: string;
}

@ObjectType('AuditPageInfo')
export class AuditPageInfoType {
  @Field()
  hasNextPage!: boolean;
  @Field(() => String, { nullable: true })
  endCursor!: string | null;
}

@ObjectType('AuditEventConnection')
export class AuditEventConnectionType {
  @Field(() => [AuditEventEdgeType])
  edges!: AuditEventEdgeType[];
  @Field(() => AuditPageInfoType)
  pageInfo!: AuditPageInfoType;

  static from(page: AuditPage): AuditEventConnectionType {
    return Object.assign(new AuditEventConnectionType(), {
      edges: page.events.map((event, i) =>
        Object.assign(new AuditEventEdgeType(), {
          node: AuditEventType.from(event),
          cursor: page.cursors[i]!,
        }),
      ),
      pageInfo: Object.assign(new AuditPageInfoType(), {
        hasNextPage: page.hasNextPage,
        endCursor: page.endCursor,
      }),
    });
  }
}
