import { GraphQLDateTimeISO } from 'graphql-scalars';
import { Field, ID, Int, ObjectType } from 'type-graphql';
import type { ProviderInvoice } from '../payments/payment-provider.js';

@ObjectType('Invoice', {
  description: 'An invoice at the payment provider (read from Stripe, not stored by Tollgate)',
})
export class InvoiceType {
  @Field(() => ID, { description: "The provider's invoice id" })
  id!: string;
  @Field(() => GraphQLDateTimeISO)
  created!: Date;
  @Field(() => Int, { description: 'In the smallest unit of the currency (e.g. cents)' })
  amountPaid!: number;
  @Field({ description: 'Three-letter ISO code, lowercase' })
  currency!: string;
  @Field(() => String, { nullable: true, description: 'draft, open, paid, uncollectible or void' })
  status!: string | null;
  @Field(() => String, {
    nullable: true,
    description: "The provider's page where the customer can view and pay it",
  })
  hostedInvoiceUrl!: string | null;

  static from(invoice: ProviderInvoice): InvoiceType {
    return Object.assign(new InvoiceType(), {
      id: invoice.id,
      created: invoice.created,
      amountPaid: invoice.amountPaid,
      currency: invoice.currency,
      status: invoice.status,
      hostedInvoiceUrl: invoice.hostedInvoiceUrl,
    });
  }
}
