/** The answer to a customer deletion: `{ id, deleted: true }` (Stripe's shape for a deleted object). */
export interface DeletedCustomerJson {
  readonly id: string;
  readonly deleted: true;
}

export function presentDeletedCustomer(deleted: { readonly id: string }): DeletedCustomerJson {
  return { id: deleted.id, deleted: true };
}
