import type { RequestHandler } from 'express';
import { ValidationError } from '../../core/errors.js';
import type { ProviderNotificationsService } from './provider-notifications.service.js';

/** Where Stripe sends notifications (endpoint to configure in Stripe's dashboard). */
export const STRIPE_WEBHOOK_PATH = '/v1/webhooks/stripe';

/**
 * `POST /v1/webhooks/stripe`: the raw body and signature → ProviderNotificationsService → 200.
 * A refused notification (400) is one Stripe will keep sending in vain, or a forgery: either way the
 * operator has to look, so it is logged with what was wrong. Other failures answer 500 (logged by the
 * error handler) so Stripe retries them.
 */
export function stripeWebhookHandler(notifications: ProviderNotificationsService): RequestHandler {
  return async (req, res) => {
    const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    try {
      await notifications.handleStripeNotification(rawBody, req.get('stripe-signature'));
    } catch (error) {
      if (error instanceof ValidationError) {
        req.log?.warn({ reason: error.message, ...error.details }, 'Stripe notification refused');
      }
      throw error;
    }
    res.status(200).json({ received: true });
  };
}
