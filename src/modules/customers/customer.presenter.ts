import type { Page } from '../../core/pagination.js';
import { noteCustomer } from '../../core/subjects.js';
import type { Customer, Metadata } from './customer.entity.js';

/** The interface's Customer object: exactly these seven fields, timestamps in ISO 8601. */
export interface CustomerJson {
  readonly id: string;
  readonly email: string;
  readonly name: string | null;
  readonly metadata: Metadata;
  readonly paymentCustomerId: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** The interface's list result. */
export interface CustomerListJson {
  readonly data: readonly CustomerJson[];
  readonly pagination: { readonly total: number; readonly limit: number; readonly offset: number };
}

export function presentCustomer(customer: Customer): CustomerJson {
  noteCustomer(customer.id);
  return {
    id: customer.id,
    email: customer.email,
    name: customer.name,
    metadata: customer.metadata,
    paymentCustomerId: customer.paymentCustomerId,
    createdAt: customer.createdAt.toISOString(),
    updatedAt: customer.updatedAt.toISOString(),
  };
}

export function presentCustomerList(page: Page<Customer>): CustomerListJson {
  return {
    data: page.data.map(presentCustomer),
    pagination: { total: page.total, limit: page.limit, offset: page.offset },
  };
}
