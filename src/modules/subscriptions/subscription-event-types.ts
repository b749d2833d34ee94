import type { WebhookEventType } from '../webhooks/webhook-event-types.js';

/** The outbound event types a change of a subscription may record (see subscription-events.ts). */
export const SUBSCRIPTION_CHANGE_EVENT_TYPES: readonly WebhookEventType[] = [
  'subscription.created',
  'subscription.updated',
  'subscription.canceled',
  'entitlements.updated',
];
