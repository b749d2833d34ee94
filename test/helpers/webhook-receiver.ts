import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  /** The request path, e.g. `/customers`. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** `Date.now()` when it arrived. */
  readonly at: number;
  /** The parsed body: `{ type, timestamp, data }`. */
  readonly payload: { type: string; timestamp: string; data: any };
}

/**
 * A real HTTP receiver on loopback, as an app would run one: it records every request and answers with
 * `status()` (200 unless a test says otherwise), or holds the request unanswered while `hold` is set.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  status: (request: ReceivedWebhook) => number = () => 200;
  hold = false;
  readonly #server: Server;
  readonly #held = new Set<() => void>();

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const entry = {
          path: req.url ?? '',
          headers: req.headers,
          body,
          at: Date.now(),
          payload: JSON.parse(body),
        };
        receiver.received.push(entry);
        if (receiver.hold) {
          receiver.#held.add(() => res.destroy());
          return;
        }
        res.writeHead(receiver.status(entry), { 'content-type': 'text/plain' });
        res.end(receiver.status(entry) >= 300 ? 'receiver says no' : 'ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** What arrived for `type` whose `data` matches `match`. */
  of(type: string, match: (data: any) => boolean = () => true): ReceivedWebhook[] {
    return this.received.filter((r) => r.payload.type === type && match(r.payload.data));
  }

  async close(): Promise<void> {
    for (const release of this.#held) release();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Verifies a received webhook with the Standard Webhooks library, as a receiver would; throws if it fails. */
export function verify(secret: string, webhook: ReceivedWebhook): unknown {
  return new Webhook(secret).verify(webhook.body, {
    'webhook-id': String(webhook.headers['webhook-id']),
    'webhook-timestamp': String(webhook.headers['webhook-timestamp']),
    'webhook-signature': String(webhook.headers['webhook-signature']),
  });
}
