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

/** What of a customer the interface shows: an entity, or a row read for a list (`customerFieldsOf`). */
export type CustomerFields = Pick<
  Customer,
  'id' | 'email' | 'name' | 'metadata' | 'paymentCustomerId' | 'createdAt' | 'updatedAt'
>;

/**
 * A customer's row as PostgreSQL returns it (column names), as the presenter reads it: a list's page
 * only shows its rows, so they become no entities of the unit of work (`em.map` of twenty rows cost
 * more than the rest of a list request).
 */
export function customerFieldsOf(row: Record<string, unknown>): CustomerFields {
  return {
    id: row.id as string,
    email: row.email as string,
    name: (row.name as string | null) ?? null,
    metadata: (row.metadata as Metadata | null) ?? {},
    paymentCustomerId: (row.payment_customer_id as string | null) ?? null,
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
  };
}

function asDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(value as string);
}

export function presentCustomer(customer: CustomerFields): CustomerJson {
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

export function presentCustomerList(page: Page<CustomerFields>): CustomerListJson {
  return {
    data: page.data.map(presentCustomer),
    pagination: { total: page.total, limit: page.limit, offset: page.offset },
  };
}
