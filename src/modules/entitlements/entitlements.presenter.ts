import { presentBalance } from '../metering/metering.presenter.js';
import type { Entitlements, FeatureCheck } from './entitlements.service.js';

/** `GET /v1/entitlements`: `{planName, features}`. */
export function presentEntitlements(entitlements: Entitlements): Entitlements {
  return { planName: entitlements.planName, features: { ...entitlements.features } };
}

/** `GET /v1/entitlements/check/:feature`: `{feature, allowed, value}`, with `balance` for a metered feature. */
export function presentFeatureCheck(check: FeatureCheck) {
  const shown = { feature: check.feature, allowed: check.allowed, value: check.value };
  return check.balance ? { ...shown, balance: presentBalance(check.balance) } : shown;
}
