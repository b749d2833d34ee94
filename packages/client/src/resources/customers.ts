import { type ApiRequester, segment } from '../api.js';
import type { RequestOptions } from '../http.js';
import { PagePromise } from '../pagination.js';
import type {
  CreateCustomerRequest,
  Customer,
  CustomerList,
  DeletedCustomer,
  PostOptions,
  SubscriptionSyncResult,
  UpdateCustomerRequest,
} from '../types.js';

export interface CustomerListQuery {
  /** Matches part of the e-mail. */
  readonly email?: string;
  /** Customers per page, 1 to 100 (Tollgate's default when unset). */
  readonly limit?: number;
  readonly offset?: number;
}

/** `/v1/customers`. */
export class Customers {
  constructor(private readonly api: ApiRequester) {}

  /**
   * A page of customers, newest first (`await`), or every customer from there on (`for await`), page
   * by page.
   */
  list(query: CustomerListQuery = {}, options?: RequestOptions): PagePromise<Customer, CustomerList> {
    return new PagePromise((offset) =>
      this.api.get<CustomerList>('/v1/customers', { ...query, offset: offset ?? query.offset }, options),
    );
  }

  create(body: CreateCustomerRequest, options?: PostOptions): Promise<Customer> {
    return this.api.post<Customer>('/v1/customers', body, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<Customer> {
    return this.api.get<Customer>(`/v1/customers/${segment(id)}`, undefined, options);
  }

  /** Metadata is merged: keys sent overwrite, a key sent as null is removed, others are kept. */
  update(id: string, body: UpdateCustomerRequest, options?: RequestOptions): Promise<Customer> {
    return this.api.patch<Customer>(`/v1/customers/${segment(id)}`, body, options);
  }

  delete(id: string, options?: RequestOptions): Promise<DeletedCustomer> {
    return this.api.delete<DeletedCustomer>(`/v1/customers/${segment(id)}`, options);
  }

  /** Re-reads the customer's billing state from the payment provider. */
  sync(id: string, options?: PostOptions): Promise<SubscriptionSyncResult> {
    return this.api.post<SubscriptionSyncResult>(`/v1/customers/${segment(id)}/sync`, {}, options);
  }
}
