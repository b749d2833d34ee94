import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { Page } from '../../core/pagination.js';
import { noteCustomer } from '../../core/subjects.js';
import type { Metadata } from './customer.entity.js';
import type { CustomerFields } from './customer.presenter.js';

@ObjectType('Customer', { description: 'An end user of an app' })
export class CustomerType {
  @Field(() => ID)
  id!: string;
  @Field()
  email!: string;
  @Field(() => String, { nullable: true })
  name!: string | null;
  @Field(() => GraphQLJSONObject, { description: 'Free-form data: string keys, any JSON values' })
  metadata!: Metadata;
  @Field(() => String, { nullable: true, description: 'Id of the linked customer at the payment provider' })
  paymentCustomerId!: string | null;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  updatedAt!: Date;

  static from(customer: CustomerFields): CustomerType {
    noteCustomer(customer.id);
    return Object.assign(new CustomerType(), {
      id: customer.id,
      email: customer.email,
      name: customer.name,
      metadata: customer.metadata,
      paymentCustomerId: customer.paymentCustomerId,
      createdAt: customer.createdAt,
      updatedAt: customer.updatedAt,
    });
  }
}

@ObjectType('Pagination')
export class PaginationType {
  @Field(() => Int, { description: 'Number of matching records, all pages together' })
  total!: number;
  @Field(() => Int)
  limit!: number;
  @Field(() => Int)
  offset!: number;
}

@ObjectType('CustomerList')
export class CustomerListType {
  @Field(() => [CustomerType])
  data!: CustomerType[];
  @Field(() => PaginationType)
  pagination!: PaginationType;

  static from(page: Page<CustomerFields>): CustomerListType {
    const pagination = Object.assign(new PaginationType(), {
      total: page.total,
      limit: page.limit,
      offset: page.offset,
    });
    return Object.assign(new CustomerListType(), { data: page.data.map(CustomerType.from), pagination });
  }
}

@InputType('CreateCustomerInput')
export class CreateCustomerInput {
  @Field()
  email!: string;
  @Field(() => String, { nullable: true })
  name?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Keys sent with null are left out' })
  metadata?: Metadata;
}

@InputType('UpdateCustomerInput')
export class UpdateCustomerInput {
  @Field(() => String, { nullable: true, description: 'null clears the name' })
  name?: string | null;
  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'Merged: sent keys are added or overwritten, a key sent as null is removed, others are kept',
  })
  metadata?: Metadata;
}
