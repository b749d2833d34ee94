import { createHmac } from 'node:crypto';
import type { Logger } from '../infra/logger.js';

/** Stripe's signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<payload>")>`. */
export function signatureHeader(payload: string, secret: string, timestamp: number): string {
  const v1 = createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex');
  return `t=${timestamp},v1=${v1}`;
}

export interface WebhookTarget {
  readonly url: string;
  readonly secret: string;
}

export interface RetryPolicy {
  /** Total attempts per event, the first included. */
  readonly attempts: number;
  /** Delay before the first retry; doubles on each further retry up to `maxDelayMs`. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 12, baseDelayMs: 100, maxDelayMs: 10_000 };

export interface DeliveryRecord {
  readonly eventId: string;
  readonly attempt: number;
  readonly status: number | 'network_error';
}

/**
 * Delivers events to one endpoint as Stripe does: signed, off the request that caused them, retried
 * with backoff until the endpoint answers 2xx. Timers are tracked so `close()` stops pending retries.
 */
export class WebhookSender {
  #target: WebhookTarget | undefined;
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly deliveries: DeliveryRecord[] = [];
  #closed = false;

  constructor(
    private readonly retry: RetryPolicy,
    private readonly logger?: Logger,
  ) {}

  setTarget(target: WebhookTarget | undefined): void {
    this.#target = target;
  }

  get target(): WebhookTarget | undefined {
    return this.#target;
  }

  /**
   * Attempts scheduled or on the wire. A retry is scheduled before the attempt that failed leaves the
   * wire, so this is 0 only once every event is delivered or given up: nothing more will be sent.
   */
  get pending(): number {
    return this.#timers.size + this.#inFlight.size;
  }

  /** Queues an event for delivery; returns at once. */
  send(eventId: string, event: object): void {
    if (!this.#target || this.#closed) return;
    const payload = JSON.stringify(event, null, 2);
    this.#schedule(eventId, payload, 1, 0);
  }

  #schedule(eventId: string, payload: string, attempt: number, delayMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      const run = this.#attempt(eventId, payload, attempt).finally(() => this.#inFlight.delete(run));
      this.#inFlight.add(run);
    }, delayMs);
    this.#timers.add(timer);
  }

  async #attempt(eventId: string, payload: string, attempt: number): Promise<void> {
    const target = this.#target;
    if (!target || this.#closed) return;
    let status: number | 'network_error';
    try {
      const res = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
          'stripe-signature': signatureHeader(payload, target.secret, Math.floor(Date.now() / 1000)),
        },
        body: payload,
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer().catch(() => undefined);
      status = res.status;
    } catch {
      status = 'network_error';
    }
    this.deliveries.push({ eventId, attempt, status });
    const delivered = typeof status === 'number' && status >= 200 && status < 300;
    if (delivered || this.#closed) return;
    if (attempt >= this.retry.attempts) {
      this.logger?.warn({ eventId, attempt, status }, 'stripe emulator: webhook delivery abandoned');
      return;
    }
    const delay = Math.min(this.retry.baseDelayMs * 2 ** (attempt - 1), this.retry.maxDelayMs);
    this.#schedule(eventId, payload, attempt + 1, delay);
  }

  /** Stops retries and waits for attempts already on the wire. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    await Promise.allSettled([...this.#inFlight]);
  }
}
