import type { WebhookAttempt, WebhookDelivery } from './webhook-delivery.entity.js';
import type { WebhookEndpoint } from './webhook-endpoint.entity.js';

/** An endpoint as the API shows it; the secret never appears here (only once, when it is made). */
export interface WebhookEndpointView {
  readonly id: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly enabled: boolean;
  readonly description: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface WebhookAttemptView {
  readonly attemptedAt: string;
  readonly statusCode: number | null;
  readonly durationMs: number;
  readonly excerpt: string;
}

export interface WebhookDeliveryView {
  readonly id: string;
  readonly endpointId: string;
  /** The `webhook-id` header: the same on every attempt. */
  readonly eventId: string;
  readonly eventType: string;
  readonly status: string;
  readonly attempts: number;
  readonly nextAttemptAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Newest first. */
  readonly attemptLog: readonly WebhookAttemptView[];
}

export function presentEndpoint(endpoint: WebhookEndpoint): WebhookEndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: [...endpoint.events],
    enabled: endpoint.enabled,
    description: endpoint.description,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
  };
}

/** Needs `event` loaded. */
export function presentDelivery(
  delivery: WebhookDelivery,
  attempts: readonly WebhookAttempt[],
): WebhookDeliveryView {
  return {
    id: delivery.id,
    endpointId: delivery.endpoint.id,
    eventId: delivery.event.id,
    eventType: delivery.event.type,
    status: delivery.status,
    attempts: delivery.attempts,
    nextAttemptAt: delivery.nextAttemptAt ? new Date(delivery.nextAttemptAt).toISOString() : null,
    createdAt: new Date(delivery.createdAt).toISOString(),
    updatedAt: new Date(delivery.updatedAt).toISOString(),
    attemptLog: attempts.map((attempt) => ({
      attemptedAt: new Date(attempt.attemptedAt).toISOString(),
      statusCode: attempt.statusCode,
      durationMs: attempt.durationMs,
      excerpt: attempt.excerpt,
    })),
  };
}
