import type { RequestHandler } from 'express';
import { ValidationError } from '../../core/errors.js';
import { noteOnAccessLine } from '../../infra/access-line.js';
import type { ProviderEvent } from '../payments/payment-provider.js';
import type { ProviderNotificationsService } from './provider-notifications.service.js';

/** Where Stripe sends notifications (endpoint to configure in Stripe's dashboard). */
export const STRIPE_WEBHOOK_PATH = '/v1/webhooks/stripe';

/**
 * `POST /v1/webhooks/stripe`: the raw body and signature → ProviderNotificationsService → 200.
 * A refused notification (400) is one Stripe will keep sending in vain, or a forgery: either way the
 * operator has to look, so it is logged with what was wrong. Other failures answer 500, or 503 for a
 * database outage (logged by the error handler), so Stripe retries them. Every line names the event's type and id, the two things an
 * operator matches against Stripe's dashboard; an acknowledged notification says so on its access line.
 */
export function stripeWebhookHandler(notifications: ProviderNotificationsService): RequestHandler {
  return async (req, res) => {
    const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    let event: ProviderEvent;
    try {
      event = notifications.verifyStripeNotification(rawBody, req.get('stripe-signature'));
    } catch (error) {
      if (error instanceof ValidationError) {
        // Unverified, so only what the body claims to be: still what the operator searches Stripe for.
        req.log?.warn(
          { reason: error.message, ...error.details, stripeEvent: claimedEvent(rawBody) },
          'Stripe notification refused',
        );
      }
      throw error;
    }
    const stripeEvent = { type: event.type, id: event.id };
    try {
      const { applied } = await notifications.applyStripeNotification(event);
      // Said on the request's access line rather than a line of its own: one line a delivery, not two.
      noteOnAccessLine(res, {
        message: applied
          ? 'Stripe notification applied'
          : 'Stripe notification acknowledged, nothing to apply',
        fields: { stripeEvent, applied },
      });
    } catch (error) {
      req.log?.warn(
        { stripeEvent, reason: error instanceof Error ? error.message : String(error) },
        'Stripe notification failed: not acknowledged, Stripe will deliver it again',
      );
      throw error;
    }
    res.status(200).json({ received: true });
  };
}

/** The `type` and `id` an unverified body claims, when it is JSON that has them (bounded, never the body itself). */
function claimedEvent(rawBody: Buffer): { type: string; id: string } | undefined {
  try {
    const parsed = JSON.parse(rawBody.toString('utf8')) as { type?: unknown; id?: unknown };
    if (typeof parsed.type === 'string' && typeof parsed.id === 'string') {
      return { type: parsed.type.slice(0, 100), id: parsed.id.slice(0, 100) };
    }
  } catch {
    // Not JSON: nothing is claimed.
  }
  return undefined;
}
