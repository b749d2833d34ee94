import { GraphQLDateTimeISO } from 'graphql-scalars';
import { Field, ID, ObjectType } from 'type-graphql';
import type { Operator } from './operator.entity.js';
import type { OperatorSessionView } from './operators.service.js';

@ObjectType('Operator', { description: 'A person who signs in to the dashboard by e-mail' })
export class OperatorType {
  @Field(() => ID)
  id!: string;
  @Field()
  email!: string;
  @Field({ description: 'owner (everything, manages operators), admin (everything else) or viewer (reads)' })
  role!: string;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;

  static from(operator: Operator): OperatorType {
    return Object.assign(new OperatorType(), {
      id: operator.id,
      email: operator.email,
      role: operator.role,
      createdAt: operator.createdAt,
    });
  }
}

@ObjectType('OperatorSession', { description: "A signed-in operator's dashboard session (never its token)" })
export class OperatorSessionType {
  @Field(() => ID)
  id!: string;
  @Field(() => ID)
  operatorId!: string;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  lastSeenAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  expiresAt!: Date;
  @Field(() => String, { nullable: true })
  ip!: string | null;
  @Field(() => String, { nullable: true })
  userAgent!: string | null;
  @Field({ description: "Whether it is the caller's own session" })
  current!: boolean;

  static from(session: OperatorSessionView): OperatorSessionType {
    return Object.assign(new OperatorSessionType(), session);
  }
}

@ObjectType('RemovedOperator')
export class RemovedType {
  @Field(() => ID)
  id!: string;
}
