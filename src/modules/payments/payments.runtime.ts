import path from 'node:path';
import type { Config } from '../../config.js';
import { ConfigError } from '../../config.js';
import { randomSecret } from '../../core/tokens.js';
import type { Logger } from '../../infra/logger.js';
import { StripeEmulator } from '../../stripe-emulator/stripe-emulator.js';
import type { PaymentProvider } from './payment-provider.js';
import { StripePaymentProvider } from './stripe-provider.js';

/** The emulator accepts any test-mode key, like stripe-mock; this one names who is calling. */
export const EMULATOR_SECRET_KEY = 'sk_test_tollgate_emulator';

export interface PaymentsRuntime {
  readonly provider: PaymentProvider;
  /** The Stripe-compatible base the SDK talks to; undefined means Stripe itself. */
  readonly apiBase: string | undefined;
  readonly webhookSecret: string;
  /** Present when the emulator runs in this process. */
  readonly emulator: StripeEmulator | undefined;
  /** Points the in-process emulator's notifications at this server (known only once it listens). */
  connectWebhooks(url: string): void;
  close(): Promise<void>;
}

/**
 * Chooses where payments go: STRIPE_SECRET_KEY → Stripe (or STRIPE_API_BASE); neither key nor base →
 * the emulator started in this process on STRIPE_EMULATOR_PORT with a webhook secret made up here.
 */
export async function startPayments(
  config: Config,
  options: { readonly logger: Logger; readonly persistEmulatorState: boolean },
): Promise<PaymentsRuntime> {
  const { secretKey, webhookSecret, apiBase, emulatorPort } = config.stripe;
  if (secretKey || apiBase) {
    if (!webhookSecret) {
      throw new ConfigError(
        'STRIPE_WEBHOOK_SECRET is required with STRIPE_SECRET_KEY or STRIPE_API_BASE (the signing secret of the webhook endpoint)',
      );
    }
    const provider = new StripePaymentProvider({
      secretKey: secretKey ?? EMULATOR_SECRET_KEY,
      webhookSecret,
      apiBase,
    });
    return {
      provider,
      apiBase,
      webhookSecret,
      emulator: undefined,
      connectWebhooks: () => undefined,
      close: async () => undefined,
    };
  }
  const secret = webhookSecret ?? randomSecret('whsec_', 24);
  const emulator = await StripeEmulator.start({
    port: emulatorPort,
    host: '127.0.0.1',
    logger: options.logger,
    // A development start keeps the emulator's objects so seeded plans' prices survive restarts.
    stateFile: options.persistEmulatorState ? path.join(config.dataDir, 'stripe-emulator.json') : undefined,
  });
  options.logger.info(
    { url: emulator.url },
    'no STRIPE_SECRET_KEY: the Stripe emulator runs in this process',
  );
  return {
    provider: new StripePaymentProvider({
      secretKey: EMULATOR_SECRET_KEY,
      webhookSecret: secret,
      apiBase: emulator.url,
    }),
    apiBase: emulator.url,
    webhookSecret: secret,
    emulator,
    connectWebhooks: (url) => emulator.setWebhookTarget({ url, secret }),
    close: () => emulator.close(),
  };
}

/**
 * A provider for one-shot CLI commands, which never start an emulator: Stripe, STRIPE_API_BASE, or an
 * emulator already listening on STRIPE_EMULATOR_PORT (e.g. inside a running `tollgate serve`).
 */
export function cliPaymentProvider(config: Config): PaymentProvider {
  const { secretKey, webhookSecret, apiBase, emulatorPort } = config.stripe;
  return new StripePaymentProvider({
    secretKey: secretKey ?? EMULATOR_SECRET_KEY,
    webhookSecret: webhookSecret ?? '',
    apiBase: secretKey ? apiBase : (apiBase ?? `http://127.0.0.1:${emulatorPort}`),
  });
}
