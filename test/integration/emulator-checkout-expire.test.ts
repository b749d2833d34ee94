import Stripe from 'stripe';
import { StripeEmulator } from '../../src/stripe-emulator/stripe-emulator.js';

let emulator: StripeEmulator;
let stripe: Stripe;

beforeAll(async () => {
  emulator = await StripeEmulator.start({});
  const url = new URL(emulator.url);
  stripe = new Stripe('sk_test_emulator', {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
});

afterAll(() => emulator.close());

async function openSession() {
  const price = await stripe.prices.create({
    product_data: { name: 'Pro' },
    currency: 'usd',
    unit_amount: 1500,
    recurring: { interval: 'month' },
  });
  return stripe.checkout.sessions.create({
    mode: 'subscription',
    line_items: [{ price: price.id, quantity: 1 }],
    customer_email: 'buyer@example.com',
    success_url: 'https://app.example.com/done',
  });
}

describe('Stripe emulator: checkout.sessions.expire', () => {
  it('expires an open session: its page no longer takes a payment and checkout.session.expired is recorded', async () => {
    const session = await openSession();
    const expired = await stripe.checkout.sessions.expire(session.id);
    expect(expired).toMatchObject({ id: session.id, object: 'checkout.session', status: 'expired' });
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe('expired');

    const page = await fetch(session.url!);
    expect(await page.text()).toContain('This checkout session has expired.');

    const events = await stripe.events.list({ limit: 100 });
    const event = events.data.find(
      (e) =>
        e.type === 'checkout.session.expired' && (e.data.object as Stripe.Checkout.Session).id === session.id,
    );
    expect(event?.data.object).toMatchObject({ id: session.id, status: 'expired' });
  });

  it('refuses to expire a session that is no longer open, as Stripe does', async () => {
    const session = await openSession();
    await stripe.checkout.sessions.expire(session.id);
    const error = await stripe.checkout.sessions.expire(session.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect((error as Stripe.errors.StripeInvalidRequestError).statusCode).toBe(400);
    expect((error as Stripe.errors.StripeInvalidRequestError).message).toBe(
      'Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "expired".',
    );
  });

  it('answers 404 resource_missing for an unknown session', async () => {
    const error = await stripe.checkout.sessions.expire('cs_test_unknown').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect((error as Stripe.errors.StripeInvalidRequestError).code).toBe('resource_missing');
  });
});
