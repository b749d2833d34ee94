import type { ApiRequester } from '../api.js';
import type { RequestOptions } from '../http.js';
import type { OrganizationList } from '../types.js';

/** `/v1/organizations`. */
export class Organizations {
  constructor(private readonly api: ApiRequester) {}

  list(query: { readonly customerId: string }, options?: RequestOptions): Promise<OrganizationList> {
    return this.api.get<OrganizationList>('/v1/organizations', query, options);
  }
}
