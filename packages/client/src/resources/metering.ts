import { type ApiRequester, contextQuery, segment } from '../api.js';
import type { RequestOptions } from '../http.js';
import type {
  BillingContext,
  CreateCreditGrantRequest,
  CreditGrant,
  CreditGrantList,
  FeatureBalance,
  FeatureBalanceList,
  PostOptions,
  RecordUsageRequest,
  UsageResult,
} from '../types.js';

/** `/v1/usage`: atomic check-and-consume of a metered feature, and refunds. */
export class Usage {
  constructor(private readonly api: ApiRequester) {}

  /**
   * Consumes `amount` (default 1) if the balance holds it: `allowed: true` with the usage's `id`, or
   * `allowed: false` with nothing recorded. Pass an `idempotencyKey` so a retried call consumes once.
   */
  record(body: RecordUsageRequest, options?: PostOptions): Promise<UsageResult> {
    return this.api.post<UsageResult>('/v1/usage', body, options);
  }

  /** Gives a usage back to the buckets that paid it (once: a second refund → 409). */
  refund(id: string, options?: PostOptions): Promise<{ balance: FeatureBalance }> {
    return this.api.post<{ balance: FeatureBalance }>(`/v1/usage/${segment(id)}/refund`, {}, options);
  }
}

/** `/v1/credit-grants`. */
export class CreditGrants {
  constructor(private readonly api: ApiRequester) {}

  create(body: CreateCreditGrantRequest, options?: PostOptions): Promise<CreditGrant> {
    return this.api.post<CreditGrant>('/v1/credit-grants', body, options);
  }

  /** The context's grants, newest first, voided and expired ones included. */
  list(context: BillingContext, options?: RequestOptions): Promise<CreditGrantList> {
    return this.api.get<CreditGrantList>('/v1/credit-grants', contextQuery(context), options);
  }

  /** Removes the grant's unspent part (once: a second void → 409). */
  void(id: string, options?: PostOptions): Promise<CreditGrant> {
    return this.api.post<CreditGrant>(`/v1/credit-grants/${segment(id)}/void`, {}, options);
  }
}

/** `/v1/balances`: the live balance of every metered feature of the context's plan. */
export class Balances {
  constructor(private readonly api: ApiRequester) {}

  list(context: BillingContext, options?: RequestOptions): Promise<FeatureBalanceList> {
    return this.api.get<FeatureBalanceList>('/v1/balances', contextQuery(context), options);
  }
}
