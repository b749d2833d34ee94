import { Field, ID, ObjectType } from 'type-graphql';

@ObjectType('DeletedCustomer', { description: 'A customer that was deleted, with its personal data' })
export class DeletedCustomerType {
  @Field(() => ID)
  id!: string;
  @Field(() => Boolean, { description: 'Always true' })
  deleted!: true;

  static from(deleted: { readonly id: string }): DeletedCustomerType {
    return Object.assign(new DeletedCustomerType(), { id: deleted.id, deleted: true as const });
  }
}
