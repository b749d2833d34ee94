import type { RequestHandler } from 'express';
import type { ProviderNotificationsService } from './provider-notifications.service.js';

/** Where Stripe sends notifications (endpoint to configure in Stripe's dashboard). */
export const STRIPE_WEBHOOK_PATH = '/v1/webhooks/stripe';

/** `POST /v1/webhooks/stripe`: the raw body and signature → ProviderNotificationsService → 200. */
export function stripeWebhookHandler(notifications: ProviderNotificationsService): RequestHandler {
  return async (req, res) => {
    const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    await notifications.handleStripeNotification(rawBody, req.get('stripe-signature'));
    res.status(200).json({ received: true });
  };
}
