import { Field, ID, ObjectType } from 'type-graphql';

@ObjectType('DeletedCustomer', {
  description: 'The answer to deleteCustomer: the customer is gone, and its personal data with it',
})
export class DeletedCustomerType {
  @Field(() => ID)
  id!: string;
  @Field(() => Boolean, { description: 'Always true' })
  deleted!: true;

  static from(deleted: { readonly id: string }): DeletedCustomerType {
    return Object.assign(new DeletedCustomerType(), { id: deleted.id, deleted: true as const });
  }
}
