import type { Metadata } from '../customers/customer.entity.js';

/**
 * Tollgate's tracking metadata on Stripe checkout sessions and subscriptions: which app, plan and buyer
 * a checkout is for, so the completed-checkout notification can create the subscription. The caller's
 * own `metadata` (any JSON) rides along on the subscription as JSON in numbered chunks, because Stripe
 * metadata values are strings of at most 500 characters.
 */
export const TRACKING_KEYS = {
  app: 'tollgate_app_id',
  plan: 'tollgate_plan_id',
  customer: 'tollgate_customer_id',
  organization: 'tollgate_organization_id',
  email: 'tollgate_email',
} as const;

const CHUNK_PREFIX = 'tollgate_metadata_';
const CHUNK_LENGTH = 500;

export type CheckoutBuyer =
  | { readonly customerId: string }
  | { readonly organizationId: string }
  | { readonly email: string };

export interface CheckoutTracking {
  readonly appId: string;
  readonly planId: string;
  readonly buyer: CheckoutBuyer;
}

export function trackingMetadata(tracking: CheckoutTracking): Record<string, string> {
  const { buyer } = tracking;
  return {
    [TRACKING_KEYS.app]: tracking.appId,
    [TRACKING_KEYS.plan]: tracking.planId,
    ...('customerId' in buyer ? { [TRACKING_KEYS.customer]: buyer.customerId } : {}),
    ...('organizationId' in buyer ? { [TRACKING_KEYS.organization]: buyer.organizationId } : {}),
    ...('email' in buyer ? { [TRACKING_KEYS.email]: buyer.email } : {}),
  };
}

/** The caller's metadata as Stripe metadata entries (none for an empty object). */
export function encodeCallerMetadata(metadata: Metadata): Record<string, string> {
  if (Object.keys(metadata).length === 0) return {};
  // Split by code point so no chunk ends inside a surrogate pair.
  const chars = [...JSON.stringify(metadata)];
  const entries: Record<string, string> = {};
  for (let i = 0; i * CHUNK_LENGTH < chars.length; i++) {
    entries[`${CHUNK_PREFIX}${i}`] = chars.slice(i * CHUNK_LENGTH, (i + 1) * CHUNK_LENGTH).join('');
  }
  return entries;
}

/** Tracking read back from Stripe metadata; null when the object was not made by a Tollgate checkout. */
export function readTracking(metadata: Readonly<Record<string, string>>): CheckoutTracking | null {
  const appId = metadata[TRACKING_KEYS.app];
  const planId = metadata[TRACKING_KEYS.plan];
  if (!appId || !planId) return null;
  const customerId = metadata[TRACKING_KEYS.customer];
  const organizationId = metadata[TRACKING_KEYS.organization];
  const email = metadata[TRACKING_KEYS.email];
  const buyer: CheckoutBuyer | null = customerId
    ? { customerId }
    : organizationId
      ? { organizationId }
      : email
        ? { email }
        : null;
  return buyer ? { appId, planId, buyer } : null;
}

/** The caller's metadata from the chunks; `{}` when there are none or they do not form JSON. */
export function decodeCallerMetadata(metadata: Readonly<Record<string, string>>): Metadata {
  const parts: string[] = [];
  for (let i = 0; metadata[`${CHUNK_PREFIX}${i}`] !== undefined; i++)
    parts.push(metadata[`${CHUNK_PREFIX}${i}`]!);
  if (parts.length === 0) return {};
  try {
    const value: unknown = JSON.parse(parts.join(''));
    return value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value))
      : {};
  } catch {
    return {};
  }
}
