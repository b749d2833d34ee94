import type Stripe from 'stripe';
import { emulatorForFile, expectFixtureShape, monthlyPrice, payOnPage } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('checkout sessions through the stripe SDK', () => {
  it('starts a subscription of several line items; lists sessions and their line items', async () => {
    const { stripe } = harness;
    const seat = await monthlyPrice(stripe, 1000);
    const addon = await monthlyPrice(stripe, 250);
    const customer = await stripe.customers.create({ email: 'lines@example.com' });
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customer.id,
      line_items: [
        { price: seat.id, quantity: 3 },
        { price: addon.id, quantity: 1 },
      ],
      success_url: 'https://app.example.com/ok',
    });
    expectFixtureShape(session, 'checkout.session');
    expect(session).toMatchObject({ amount_subtotal: 3250, amount_total: 3250, payment_intent: null });

    const items = await stripe.checkout.sessions.listLineItems(session.id);
    expect(items.data.map((i) => [i.price?.id, i.quantity, i.amount_total])).toEqual([
      [seat.id, 3, 3000],
      [addon.id, 1, 250],
    ]);
    for (const item of items.data) expectFixtureShape(item, 'item');

    expect((await payOnPage(session.url!)).status).toBe(303);
    const done = await stripe.checkout.sessions.retrieve(session.id, {
      expand: ['subscription', 'subscription.latest_invoice'],
    });
    const subscription = done.subscription as Stripe.Subscription;
    expect(subscription.items.data.map((i) => [i.price.id, i.quantity])).toEqual([
      [seat.id, 3],
      [addon.id, 1],
    ]);
    expect((subscription.latest_invoice as Stripe.Invoice).amount_paid).toBe(3250);

    const listed = await stripe.checkout.sessions.list({ customer: customer.id });
    expect(listed.data.map((s) => s.id)).toEqual([session.id]);
    expect(
      (await stripe.checkout.sessions.list({ subscription: subscription.id })).data.map((s) => s.id),
    ).toEqual([session.id]);
    const open = await stripe.checkout.sessions.list({ status: 'open', limit: 100 });
    expect(open.data.map((s) => s.id)).not.toContain(session.id);
  });

  it('takes a one-time payment in payment mode: paid, a payment intent, no subscription', async () => {
    const { stripe } = harness;
    const product = await stripe.products.create({ name: 'Credits' });
    const oneTime = await stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: 4900 });
    expect(oneTime.type).toBe('one_time');
    const session = await stripe.checkout.sessions.create({
      mode: 'payment',
      line_items: [{ price: oneTime.id, quantity: 2 }],
      customer_email: 'buyer@example.com',
      success_url: 'https://app.example.com/ok',
    });
    expect(session).toMatchObject({ mode: 'payment', amount_total: 9800, status: 'open' });
    const page = await (await fetch(session.url!)).text();
    expect(page).toContain('98.00 USD');
    expect((await payOnPage(session.url!)).status).toBe(303);
    const done = await stripe.checkout.sessions.retrieve(session.id);
    expect(done).toMatchObject({
      status: 'complete',
      payment_status: 'paid',
      subscription: null,
      invoice: null,
    });
    expect(done.payment_intent).toMatch(/^pi_/);
    expect(done.customer).toMatch(/^cus_/);

    const recurring = await monthlyPrice(stripe, 100);
    await expect(
      stripe.checkout.sessions.create({
        mode: 'payment',
        line_items: [{ price: recurring.id }],
        success_url: 'https://app.example.com/ok',
      }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'line_items[0][price]' });
    await expect(
      stripe.checkout.sessions.create({
        mode: 'subscription',
        line_items: [{ price: oneTime.id }],
        success_url: 'https://app.example.com/ok',
      }),
    ).rejects.toMatchObject({
      statusCode: 400,
      message: 'You must provide at least one recurring price in `subscription` mode.',
    });
  });

  it('sells a metered price beside a licensed one: nothing due for the usage until it is billed', async () => {
    const { stripe } = harness;
    const meter = await stripe.billing.meters.create({
      display_name: 'Checkout usage',
      event_name: `checkout_usage_${Date.now()}`,
      default_aggregation: { formula: 'sum' },
    });
    const product = await stripe.products.create({ name: 'Usage' });
    const usage = await stripe.prices.create({
      product: product.id,
      currency: 'usd',
      unit_amount: 5,
      recurring: { interval: 'month', usage_type: 'metered', meter: meter.id },
    });
    const base = await monthlyPrice(stripe, 2000);
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      line_items: [{ price: base.id, quantity: 1 }, { price: usage.id }],
      customer_email: 'metered-checkout@example.com',
      success_url: 'https://app.example.com/ok',
    });
    expect(session).toMatchObject({ amount_subtotal: 2000, amount_total: 2000 });
    expect((await payOnPage(session.url!)).status).toBe(303);
    const done = await stripe.checkout.sessions.retrieve(session.id, { expand: ['subscription'] });
    const items = (done.subscription as Stripe.Subscription).items.data;
    expect(items.map((i) => [i.price.id, i.quantity])).toEqual([
      [base.id, 1],
      [usage.id, undefined],
    ]);
  });
});
