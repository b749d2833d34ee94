import type { Entitlements, FeatureCheck } from './entitlements.service.js';

/** `GET /v1/entitlements`: `{planName, features}`. */
export function presentEntitlements(entitlements: Entitlements): Entitlements {
  return { planName: entitlements.planName, features: { ...entitlements.features } };
}

/** `GET /v1/entitlements/check/:feature`: `{feature, allowed, value}`. */
export function presentFeatureCheck(check: FeatureCheck): FeatureCheck {
  return { feature: check.feature, allowed: check.allowed, value: check.value };
}
