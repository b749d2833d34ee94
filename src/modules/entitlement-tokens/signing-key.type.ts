import { GraphQLDateTimeISO } from 'graphql-scalars';
import { Field, ID, ObjectType } from 'type-graphql';
import type { SigningKeyView } from './entitlement-tokens.service.js';

@ObjectType('EntitlementSigningKey', {
  description: "A key an app's entitlement tokens are signed with (its public half is in the app's JWKS)",
})
export class EntitlementSigningKeyType {
  @Field(() => ID, { description: 'The JWK `kid`' })
  kid!: string;
  @Field(() => GraphQLDateTimeISO, { description: 'Published in the JWKS since' })
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO, { description: 'Signs tokens from (until a newer key takes over)' })
  signsFrom!: Date;
  @Field(() => GraphQLDateTimeISO, { nullable: true, description: 'Leaves the JWKS at' })
  retireAt!: Date | null;
  @Field(() => GraphQLDateTimeISO, { nullable: true, description: 'Revoked at (removed at once)' })
  revokedAt!: Date | null;

  static from(view: SigningKeyView): EntitlementSigningKeyType {
    return Object.assign(new EntitlementSigningKeyType(), view);
  }
}
