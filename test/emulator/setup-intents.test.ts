import { emulatorForFile, expectFixtureShape } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('setup intents through the stripe SDK', () => {
  it('creates a setup intent waiting for a payment method, retrievable by id', async () => {
    const { stripe } = harness;
    const customer = await stripe.customers.create({ email: 'setup@example.com' });
    const intent = await stripe.setupIntents.create({
      customer: customer.id,
      usage: 'off_session',
      metadata: { purpose: 'card-on-file' },
      expand: ['customer'],
    });
    expectFixtureShape(intent, 'setup_intent');
    expect(intent).toMatchObject({
      object: 'setup_intent',
      status: 'requires_payment_method',
      usage: 'off_session',
      payment_method_types: ['card'],
      metadata: { purpose: 'card-on-file' },
      customer: { id: customer.id, email: 'setup@example.com' },
    });
    expect(intent.client_secret).toMatch(new RegExp(`^${intent.id}_secret_`));
    expect((await stripe.setupIntents.retrieve(intent.id)).customer).toBe(customer.id);
    await expect(stripe.setupIntents.create({ customer: 'cus_missing' })).rejects.toMatchObject({
      statusCode: 404,
      param: 'customer',
    });
  });
});
