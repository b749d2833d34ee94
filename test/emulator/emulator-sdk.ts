import { readFileSync } from 'node:fs';
import Stripe from 'stripe';
import { StripeEmulator } from '../../src/stripe-emulator/stripe-emulator.js';

/**
 * The emulator run on its own, as `tollgate stripe-emulator` runs it, with the unmodified `stripe` SDK
 * pointed at it; and the check that its objects have the shape of Stripe's published fixtures
 * (stripe/openapi `fixtures3.json`, the resources kept in fixtures/).
 */

export interface EmulatorHarness {
  readonly emulator: StripeEmulator;
  readonly stripe: Stripe;
  /** A raw request to the emulator, for what the SDK cannot send (unknown paths, the renewal helper). */
  request(
    method: string,
    path: string,
    body?: Record<string, string>,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

export const EMULATOR_KEY = 'sk_test_emulator';

export function sdkFor(url: string): Stripe {
  const base = new URL(url);
  return new Stripe(EMULATOR_KEY, {
    host: base.hostname,
    port: Number(base.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

/** Starts an emulator for the file's tests and stops it after them. */
export function emulatorForFile(): EmulatorHarness {
  const harness = {} as { emulator: StripeEmulator; stripe: Stripe };
  beforeAll(async () => {
    harness.emulator = await StripeEmulator.start();
    harness.stripe = sdkFor(harness.emulator.url);
  });
  afterAll(async () => {
    await harness.emulator.close();
  });
  return {
    get emulator() {
      return harness.emulator;
    },
    get stripe() {
      return harness.stripe;
    },
    request: (method, path, body, headers = {}) =>
      fetch(`${harness.emulator.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${EMULATOR_KEY}`, ...headers },
        ...(body ? { body: new URLSearchParams(body) } : {}),
      }),
  };
}

const FIXTURES = JSON.parse(
  readFileSync(new URL('./fixtures/stripe-fixtures3.json', import.meta.url), 'utf8'),
) as { resources: Record<string, Record<string, unknown>> };

/**
 * Every field of `object` is a field of Stripe's fixture of `resource` (the emulator invents none), and
 * where both hold a value other than null, of the same JSON type.
 */
export function expectFixtureShape(object: object, resource: string): void {
  const fixture = FIXTURES.resources[resource];
  if (!fixture) throw new Error(`no fixture kept for ${resource}`);
  // The SDK reads Stripe's decimal strings (`unit_amount_decimal`) into its Decimal type.
  const kind = (v: unknown) =>
    v === null
      ? 'null'
      : Array.isArray(v)
        ? 'array'
        : typeof v === 'object' && String(v?.constructor?.name).includes('Decimal')
          ? 'string'
          : typeof v;
  const problems: string[] = [];
  for (const [key, value] of Object.entries(object)) {
    if (!(key in fixture)) {
      problems.push(`${key}: not a field of Stripe's ${resource}`);
      continue;
    }
    const expected = fixture[key];
    if (value !== null && expected !== null && kind(value) !== kind(expected)) {
      problems.push(`${key}: ${kind(value)}, Stripe's is ${kind(expected)}`);
    }
  }
  expect(problems).toEqual([]);
}

/** The hosted checkout page paid as a browser would (card 4242…); returns the redirect. */
export async function payOnPage(url: string, form: Record<string, string> = {}): Promise<Response> {
  const html = await (await fetch(url)).text();
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error('the checkout page has no payment form');
  const fields = { ...form };
  if (html.includes('name="card_number"')) fields.card_number ??= '4242 4242 4242 4242';
  if (html.includes('name="email"')) fields.email ??= 'payer@example.com';
  return fetch(new URL(action, url), {
    method: 'POST',
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
}

/** A monthly licensed price of a new product. */
export async function monthlyPrice(
  stripe: Stripe,
  unitAmount = 1000,
  extra: Partial<Stripe.PriceCreateParams> = {},
) {
  const product = await stripe.products.create({ name: `Product ${Math.random().toString(36).slice(2, 8)}` });
  return stripe.prices.create({
    product: product.id,
    currency: 'usd',
    unit_amount: unitAmount,
    recurring: { interval: 'month' },
    ...extra,
  });
}

/** A customer with a saved card, as a checkout that collected one leaves them. */
export async function customerWithCard(harness: EmulatorHarness, email: string): Promise<Stripe.Customer> {
  const { stripe } = harness;
  const customer = await stripe.customers.create({ email });
  const price = await monthlyPrice(stripe, 100);
  const session = await stripe.checkout.sessions.create({
    mode: 'subscription',
    customer: customer.id,
    line_items: [{ price: price.id }],
    success_url: 'https://app.example.com/ok',
  });
  const paid = await payOnPage(session.url!);
  if (paid.status !== 303) throw new Error(`checkout answered ${paid.status}`);
  return (await stripe.customers.retrieve(customer.id)) as Stripe.Customer;
}
