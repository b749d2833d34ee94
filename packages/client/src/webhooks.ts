import { TollgateError } from './errors.js';
import type { WebhookEvent } from './webhook-events.js';

/** How far a delivery's timestamp may be from now, either way (replayed deliveries are refused). */
const TOLERANCE_SECONDS = 5 * 60;

type Headers = Record<string, string | readonly string[] | undefined> | globalThis.Headers;

function header(headers: Headers, name: string): string | undefined {
  if (typeof (headers as globalThis.Headers).get === 'function') {
    return (headers as globalThis.Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

function refused(message: string): TollgateError {
  return new TollgateError({ statusCode: 400, error: 'Bad Request', message });
}

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Compares in time independent of where the strings differ. */
function equalInConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * Verifies a webhook delivery signed the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.payload">`, secret `whsec_<base64>`)
 * and returns the parsed event, a `WebhookEvent` told apart by `type`. Pass the raw body exactly as
 * received. Throws a TollgateError (400) for a bad signature, a missing header or a timestamp more than
 * five minutes away.
 */
export async function verifyWebhook<T = WebhookEvent>(
  payload: string | Uint8Array,
  headers: Headers,
  secret: string,
  options: { now?: () => number } = {},
): Promise<T> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw refused('missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  const seconds = Number(timestamp);
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  if (!/^\d+$/.test(timestamp) || Math.abs(now - seconds) > TOLERANCE_SECONDS) {
    throw refused('webhook-timestamp is too far from now');
  }
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const key = await crypto.subtle.importKey(
    'raw',
    base64ToBytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${timestamp}.${body}`)),
  );
  const expected = bytesToBase64(mac);
  const valid = signatures
    .split(' ')
    .some((entry) => entry.startsWith('v1,') && equalInConstantTime(entry.slice(3), expected));
  if (!valid) throw refused('no valid webhook signature');
  try {
    return JSON.parse(body) as T;
  } catch {
    throw refused('the webhook payload is not JSON');
  }
}
