/**
 * The registry of outbound event types: what an endpoint may subscribe to, and what the core may record.
 * A feature that records a new type adds it here (and to docs/reference/events.md).
 */
export const WEBHOOK_EVENT_TYPES = [
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'subscription.created',
  'subscription.updated',
  'subscription.canceled',
  'entitlements.updated',
  'plan.updated',
  'usage.limit_reached',
  'credit_grant.created',
  'credit_grant.voided',
  'organization.member_added',
  'organization.member_removed',
  'organization.invitation_created',
  'webhook.test',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

const KNOWN: ReadonlySet<string> = new Set(WEBHOOK_EVENT_TYPES);

export function isWebhookEventType(type: string): type is WebhookEventType {
  return KNOWN.has(type);
}
