import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../infra/logger.js';
import { newEvent } from './events.js';
import type { Obj } from './parameters.js';
import { createEmulatorApp } from './server.js';
import { type Emulation, loadState, type State, saveState } from './state.js';
import { renewSubscription } from './subscriptions.js';
import { DEFAULT_RETRY, type RetryPolicy, WebhookSender, type WebhookTarget } from './webhook-sender.js';

/**
 * A Stripe-compatible HTTP server for the calls Tollgate makes, so the unmodified `stripe` SDK runs
 * against it in development and tests: form-encoded parameters, Stripe's object shapes (API version
 * of the SDK in use), Stripe's error body, idempotency keys, a hosted checkout page and signed webhooks.
 * Development and test tooling only; production talks to Stripe.
 *
 * This file is the process-facing handle (start, stop, webhook target, what tests observe); each
 * resource lives in its own file, every path in routes.ts, the HTTP edge in server.ts.
 */

export interface StripeEmulatorOptions {
  /** Default 0: a free port. */
  readonly port?: number;
  readonly host?: string;
  /** Where events go; may also be set later with `setWebhookTarget` (e.g. once the app's port is known). */
  readonly webhook?: WebhookTarget;
  readonly retry?: RetryPolicy;
  readonly logger?: Logger;
  /** Keep the state in this JSON file across restarts (development); in memory only when unset. */
  readonly stateFile?: string;
}

export class StripeEmulator {
  readonly #server: Server;
  readonly #sender: WebhookSender;
  readonly #state: State;
  readonly #emulation: Emulation;
  #url = '';

  private constructor(options: StripeEmulatorOptions) {
    this.#sender = new WebhookSender(options.retry ?? DEFAULT_RETRY, options.logger);
    this.#sender.setTarget(options.webhook);
    const stateFile = options.stateFile;
    const state = loadState(stateFile);
    const sender = this.#sender;
    const url = () => this.#url;
    this.#state = state;
    this.#emulation = {
      state,
      // Known once listening; hosted pages and invoices link to it.
      get url() {
        return url();
      },
      emit(type, object, previous) {
        const event = newEvent(type, object, previous, sender.target ? 1 : 0);
        state.events[event.id] = event;
        sender.send(event.id, event);
      },
      save: () => saveState(stateFile, state),
    };
    this.#server = createServer(createEmulatorApp(this.#emulation));
  }

  /** Starts an emulator listening on `options.port` (default: a free port) on loopback. */
  static async start(options: StripeEmulatorOptions = {}): Promise<StripeEmulator> {
    const emulator = new StripeEmulator(options);
    const host = options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      emulator.#server.once('error', reject);
      emulator.#server.listen(options.port ?? 0, host, () => {
        emulator.#server.off('error', reject);
        resolve();
      });
    });
    const { port } = emulator.#server.address() as AddressInfo;
    emulator.#url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    return emulator;
  }

  /** Base URL, e.g. `http://127.0.0.1:12111`. */
  get url(): string {
    return this.#url;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  setWebhookTarget(target: WebhookTarget | undefined): void {
    this.#sender.setTarget(target);
  }

  /** Every delivery attempt so far (tests use it to observe retries). */
  get deliveries() {
    return this.#sender.deliveries;
  }

  /** Delivery attempts scheduled or under way; 0 once every event is delivered or given up. */
  get pendingDeliveries(): number {
    return this.#sender.pending;
  }

  /** Every event created so far, oldest first. */
  get events(): Obj[] {
    return Object.values(this.#state.events);
  }

  /** Ends a subscription's current period (or trial) now; see `renewSubscription` in subscriptions.ts. */
  renewSubscription(id: string, options: { readonly fail?: boolean } = {}): Obj {
    const subscription = renewSubscription(this.#emulation, id, options);
    this.#emulation.save();
    return subscription;
  }

  async close(): Promise<void> {
    await this.#sender.close();
    await new Promise<void>((resolve) => {
      if (!this.#server.listening) return resolve();
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
