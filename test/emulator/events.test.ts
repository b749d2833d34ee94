import { emulatorForFile, expectFixtureShape } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('events through the stripe SDK', () => {
  it('filters events by type, a type with a wildcard, and a list of types', async () => {
    const { stripe } = harness;
    const customer = await stripe.customers.create({ email: 'events@example.com' });
    await stripe.customers.update(customer.id, { name: 'Renamed' });
    await stripe.setupIntents.create({ customer: customer.id });
    const types = async (params: object) =>
      (await stripe.events.list({ limit: 100, ...params })).data.map((e) => e.type);

    expect(await types({ type: 'customer.updated' })).toEqual(['customer.updated']);
    expect(await types({ type: 'customer.*' })).toEqual(['customer.updated', 'customer.created']);
    expect(await types({ types: ['customer.created', 'setup_intent.created'] })).toEqual([
      'setup_intent.created',
      'customer.created',
    ]);
    expect(await types({ type: 'invoice.paid' })).toEqual([]);
    const [event] = (await stripe.events.list({ type: 'customer.created' })).data;
    expectFixtureShape(event!, 'event');
    expect(await stripe.events.retrieve(event!.id)).toEqual(event);
  });
});
