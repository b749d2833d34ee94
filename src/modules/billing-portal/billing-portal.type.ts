import { Field, ObjectType } from 'type-graphql';

@ObjectType('BillingPortalSession')
export class BillingPortalSessionType {
  @Field({ description: "Stripe's customer portal, to send the customer to; short-lived" })
  url!: string;
}
