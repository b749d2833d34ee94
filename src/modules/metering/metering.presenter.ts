import type { Balance, CreditGrant } from './ledger.js';

/** The answer to a consumption: recorded (with its id), or refused with nothing recorded. */
export type UsageResult =
  | {
      readonly allowed: true;
      readonly id: string;
      readonly feature: string;
      readonly amount: number;
      readonly balance: Balance;
    }
  | { readonly allowed: false; readonly balance: Balance | null };

/** A balance inside a check or a usage answer: `{limit, granted, used, remaining, overage, resetsAt}`. */
export function presentBalance(balance: Balance) {
  return {
    limit: balance.limit,
    granted: balance.granted,
    used: balance.used,
    remaining: balance.remaining,
    overage: balance.overage,
    resetsAt: balance.resetsAt?.toISOString() ?? null,
  };
}

/** An item of `GET /v1/balances`: `{feature, limit, granted, used, remaining, overage, resetsAt}`. */
export function presentFeatureBalance(balance: Balance) {
  return { feature: balance.feature, ...presentBalance(balance) };
}

/** `POST /v1/usage`: `{id, feature, amount, allowed: true, balance}` or `{allowed: false, balance}`. */
export function presentUsage(result: UsageResult) {
  if (!result.allowed) {
    return { allowed: false, balance: result.balance === null ? null : presentBalance(result.balance) };
  }
  return {
    id: result.id,
    feature: result.feature,
    amount: result.amount,
    allowed: true,
    balance: presentBalance(result.balance),
  };
}

/** A credit grant as `/v1/credit-grants…` and the outbound webhooks show it. */
export function presentGrant(grant: CreditGrant) {
  return {
    id: grant.id,
    customerId: grant.customerId,
    organizationId: grant.organizationId,
    feature: grant.feature,
    amount: grant.amount,
    remaining: grant.remaining,
    priority: grant.priority,
    expiresAt: grant.expiresAt?.toISOString() ?? null,
    description: grant.description,
    voidedAt: grant.voidedAt?.toISOString() ?? null,
    createdAt: grant.createdAt.toISOString(),
  };
}
