import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The three Standard Webhooks headers for one message. Each secret signs; several signatures go in one
 * header separated by spaces (after a rotation, the old and the new secret), and a receiver accepts the
 * message when any of them verifies.
 */
export function signedHeaders(
  secrets: readonly string[],
  messageId: string,
  sentAt: Date,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, sentAt, body)).join(' '),
  };
}
