import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, ObjectType } from 'type-graphql';

@ObjectType('CheckoutSession')
export class CheckoutSessionType {
  @Field({ description: 'The hosted payment page to send the customer to' })
  url!: string;
}

@InputType('CheckoutSessionInput', { description: 'Exactly one of customerId, email or organizationId' })
export class CheckoutSessionInput {
  @Field(() => ID)
  planId!: string;
  @Field({ description: 'Absolute URL; `{CHECKOUT_SESSION_ID}` is replaced by the session id' })
  successUrl!: string;
  @Field()
  cancelUrl!: string;
  @Field(() => ID, { nullable: true })
  customerId?: string;
  @Field({ nullable: true, description: 'A new customer, created when the checkout completes' })
  email?: string;
  @Field(() => ID, { nullable: true })
  organizationId?: string;
  @Field({ nullable: true, description: 'A Stripe promotion code' })
  couponCode?: string;
  @Field({ nullable: true })
  collectBillingAddress?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Stored on the resulting subscription' })
  metadata?: Record<string, unknown>;
}
