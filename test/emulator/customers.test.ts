import type Stripe from 'stripe';
import { customerWithCard, emulatorForFile, expectFixtureShape } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('customers through the stripe SDK', () => {
  it('creates, retrieves and updates a customer in the shape of Stripe’s fixture', async () => {
    const { stripe } = harness;
    const created = await stripe.customers.create({ email: 'shape@example.com', name: 'Shape' });
    expectFixtureShape(created, 'customer');
    const updated = await stripe.customers.update(created.id, { name: 'Renamed' });
    expect(updated).toMatchObject({ id: created.id, name: 'Renamed', email: 'shape@example.com' });
  });

  it('deletes a customer: the deleted object, its subscriptions canceled, gone from lists and calls', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'deleted@example.com');
    const [subscription] = (await stripe.subscriptions.list({ customer: customer.id })).data;
    expect(subscription?.status).toBe('active');

    const deleted = await stripe.customers.del(customer.id);
    expect(deleted).toMatchObject({ id: customer.id, object: 'customer', deleted: true });
    expectFixtureShape(deleted, 'deleted_customer');
    expect(await stripe.customers.retrieve(customer.id)).toMatchObject({ id: customer.id, deleted: true });
    expect((await stripe.subscriptions.retrieve(subscription!.id)).status).toBe('canceled');
    expect((await stripe.customers.list({ email: 'deleted@example.com' })).data).toEqual([]);
    await expect(stripe.customers.update(customer.id, { name: 'x' })).rejects.toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
      message: `No such customer: '${customer.id}'`,
    });
    await expect(stripe.customers.del(customer.id)).rejects.toMatchObject({ statusCode: 404 });
    const types = (await stripe.events.list({ type: 'customer.deleted', limit: 100 })).data.map(
      (e) => (e.data.object as Stripe.Customer).id,
    );
    expect(types).toContain(customer.id);
  });

  it('searches customers with Stripe’s query language: email, metadata, OR, negation and pages', async () => {
    const { stripe } = harness;
    const tag = `t${Date.now()}`;
    const ann = await stripe.customers.create({
      email: `ann-${tag}@example.com`,
      name: 'Ann',
      metadata: { tag, tier: 'gold' },
    });
    const bob = await stripe.customers.create({
      email: `bob-${tag}@example.com`,
      name: 'Bob',
      metadata: { tag, tier: 'free' },
    });
    const ids = (r: Stripe.ApiSearchResult<Stripe.Customer>) => r.data.map((c) => c.id);

    const byEmail = await stripe.customers.search({ query: `email:'ANN-${tag}@example.com'` });
    expect(byEmail).toMatchObject({
      object: 'search_result',
      url: '/v1/customers/search',
      has_more: false,
      next_page: null,
    });
    expect(ids(byEmail)).toEqual([ann.id]);
    expect(
      ids(await stripe.customers.search({ query: `metadata['tag']:'${tag}' AND metadata["tier"]:"gold"` })),
    ).toEqual([ann.id]);
    expect(ids(await stripe.customers.search({ query: `metadata['tag']:'${tag}' AND -name:'Ann'` }))).toEqual(
      [bob.id],
    );
    expect(
      ids(
        await stripe.customers.search({
          query: `email:'ann-${tag}@example.com' OR email:'bob-${tag}@example.com'`,
        }),
      ),
    ).toEqual([bob.id, ann.id]);
    expect(ids(await stripe.customers.search({ query: `email~'${tag}' AND name:'nobody'` }))).toEqual([]);

    const first = await stripe.customers.search({ query: `metadata['tag']:'${tag}'`, limit: 1 });
    expect(first).toMatchObject({ has_more: true, next_page: expect.any(String) });
    const second = await stripe.customers.search({
      query: `metadata['tag']:'${tag}'`,
      limit: 1,
      page: first.next_page!,
    });
    expect([...ids(first), ...ids(second)]).toEqual([bob.id, ann.id]);
    expect(second.has_more).toBe(false);

    await expect(stripe.customers.search({ query: `status:'active'` })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining(
        'Field `status` is an unsupported search field for resource `customers`.',
      ),
    });
    await expect(
      stripe.customers.search({ query: `email:'a' AND name:'b' OR name:'c'` }),
    ).rejects.toMatchObject({
      statusCode: 400,
      message: 'Combining `AND` and `OR` in the same query is not supported.',
    });
    await expect(stripe.customers.search({ query: 'email' })).rejects.toMatchObject({
      statusCode: 400,
      param: 'query',
    });
  });

  it('lists the cards a customer saved on the hosted pages', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'cards@example.com');
    const methods = await stripe.customers.listPaymentMethods(customer.id, { type: 'card' });
    expect(methods.data).toHaveLength(1);
    const [card] = methods.data;
    expect(card).toMatchObject({
      object: 'payment_method',
      type: 'card',
      customer: customer.id,
      card: { last4: '4242', brand: 'visa' },
    });
    expect(customer.invoice_settings.default_payment_method).toBe(card!.id);
    expectFixtureShape(card!, 'payment_method');
    const other = await stripe.customers.create({ email: 'nocards@example.com' });
    expect((await stripe.customers.listPaymentMethods(other.id)).data).toEqual([]);
    const expanded = await stripe.customers.retrieve(customer.id, {
      expand: ['invoice_settings.default_payment_method'],
    });
    expect(
      ((expanded as Stripe.Customer).invoice_settings.default_payment_method as Stripe.PaymentMethod).card
        ?.last4,
    ).toBe('4242');
  });
});
