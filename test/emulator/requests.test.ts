import Stripe from 'stripe';
import { emulatorForFile } from './emulator-sdk.js';

/** What every call shares: unrecognized URLs, idempotency keys, `expand`. */
const harness = emulatorForFile();

describe('emulator requests through the stripe SDK', () => {
  it('answers a call it does not emulate as Stripe answers an unrecognized URL, never as a missing object', async () => {
    const { stripe } = harness;
    const customer = await stripe.customers.create({ email: 'unrecognized@example.com' });
    await expect(stripe.paymentIntents.create({ amount: 100, currency: 'usd' })).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      statusCode: 404,
      message:
        'Unrecognized request URL (POST: /v1/payment_intents). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.',
    });
    const balance = stripe.customers.createBalanceTransaction(customer.id, { amount: 1, currency: 'usd' });
    await expect(balance).rejects.toMatchObject({
      statusCode: 404,
      code: undefined,
      message: expect.stringMatching(
        new RegExp(
          `^Unrecognized request URL \\(POST: /v1/customers/${customer.id}/balance_transactions\\)\\.`,
        ),
      ),
    });
    const raw = await harness.request('GET', '/v1/subscription_items');
    expect(raw.status).toBe(404);
    expect((await raw.json()).error).toEqual({
      type: 'invalid_request_error',
      message:
        'Unrecognized request URL (GET: /v1/subscription_items). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.',
    });
  });

  it('replays an idempotent request with the same parameters and refuses the key for other ones', async () => {
    const { stripe } = harness;
    const key = `idem-${Date.now()}`;
    const first = await stripe.customers.create(
      { email: 'a@example.com', metadata: { n: '1' } },
      { idempotencyKey: key },
    );
    const again = await stripe.customers.create(
      { metadata: { n: '1' }, email: 'a@example.com' },
      { idempotencyKey: key },
    );
    expect(again.id).toBe(first.id);
    expect(again.lastResponse.headers['idempotent-replayed']).toBe('true');

    const other = stripe.customers.create({ email: 'b@example.com' }, { idempotencyKey: key });
    await expect(other).rejects.toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    await expect(other).rejects.toMatchObject({
      type: 'StripeIdempotencyError',
      statusCode: 400,
      message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
    });
    const elsewhere = stripe.products.create({ name: 'P' }, { idempotencyKey: key });
    await expect(elsewhere).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining(`('POST /v1/customers' vs 'POST /v1/products')`),
    });
    const listed = await stripe.customers.list({ email: 'b@example.com' });
    expect(listed.data).toEqual([]);
  });

  it('expands any expandable field the request names, nested with dots, on objects and lists', async () => {
    const { stripe } = harness;
    const product = await stripe.products.create({ name: 'Expanded' });
    const price = await stripe.prices.create({
      product: product.id,
      currency: 'usd',
      unit_amount: 700,
      recurring: { interval: 'month' },
    });
    const plain = await stripe.prices.retrieve(price.id);
    expect(plain.product).toBe(product.id);
    const expanded = await stripe.prices.retrieve(price.id, { expand: ['product'] });
    expect(expanded.product).toEqual(product);

    const listed = await stripe.prices.list({ product: product.id, expand: ['data.product'] });
    expect((listed.data[0]!.product as Stripe.Product).name).toBe('Expanded');

    await expect(stripe.prices.retrieve(price.id, { expand: ['currency'] })).rejects.toMatchObject({
      statusCode: 400,
      message: 'This property cannot be expanded (currency).',
    });
    await expect(stripe.prices.retrieve(price.id, { expand: ['nothing'] })).rejects.toMatchObject({
      statusCode: 400,
      message: 'This property cannot be expanded (nothing).',
    });
    // The stored object keeps its id.
    expect((await stripe.prices.retrieve(price.id)).product).toBe(product.id);
  });
});
