import type Stripe from 'stripe';
import { customerWithCard, emulatorForFile, expectFixtureShape, monthlyPrice } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('invoices through the stripe SDK', () => {
  it('previews the first invoice of a new subscription of several items, with a coupon named for the preview', async () => {
    const { stripe } = harness;
    const customer = await stripe.customers.create({ email: 'preview-new@example.com' });
    const seat = await monthlyPrice(stripe, 1500);
    const addon = await monthlyPrice(stripe, 500);
    const coupon = await stripe.coupons.create({ percent_off: 20, duration: 'forever' });
    const preview = await stripe.invoices.createPreview({
      customer: customer.id,
      subscription_details: { items: [{ price: seat.id, quantity: 2 }, { price: addon.id }] },
      discounts: [{ coupon: coupon.id }],
    });
    expectFixtureShape(preview, 'invoice');
    expect(preview).toMatchObject({
      billing_reason: 'subscription_create',
      customer: customer.id,
      subtotal: 3500,
      total: 2800,
      amount_due: 2800,
      total_discount_amounts: [{ amount: 700 }],
    });
    expect(preview.lines.data.map((l) => [l.pricing?.price_details?.price, l.quantity, l.amount])).toEqual([
      [seat.id, 2, 3000],
      [addon.id, 1, 500],
    ]);
    // Nothing was made.
    expect((await stripe.subscriptions.list({ customer: customer.id })).data).toEqual([]);
  });

  it('previews an existing subscription with other discounts than its own, and lists invoices by filter', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'preview-discount@example.com');
    const price = await monthlyPrice(stripe, 4000);
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: price.id }],
    });
    const fixed = await stripe.coupons.create({ amount_off: 500, currency: 'usd', duration: 'once' });
    const own = await stripe.invoices.createPreview({ subscription: subscription.id });
    expect(own).toMatchObject({ total: 4000, discounts: [], total_discount_amounts: [] });
    const discounted = await stripe.invoices.createPreview({
      subscription: subscription.id,
      discounts: [{ coupon: fixed.id }],
    });
    expect(discounted).toMatchObject({ subtotal: 4000, total: 3500, amount_due: 3500 });
    expect((await stripe.subscriptions.retrieve(subscription.id)).discounts).toEqual([]);

    const invoices = await stripe.invoices.list({ subscription: subscription.id, status: 'paid' });
    expect(invoices.data.map((i) => i.id)).toEqual([subscription.latest_invoice]);
    const invoice = invoices.data[0] as Stripe.Invoice;
    expectFixtureShape(invoice, 'invoice');
    expect(invoice.lines.data[0]).toMatchObject({ amount: 4000, quantity: 1, invoice: invoice.id });
    expect((await stripe.invoices.list({ subscription: subscription.id, status: 'open' })).data).toEqual([]);
    await expect(stripe.invoices.createPreview({})).rejects.toMatchObject({
      statusCode: 400,
      param: 'customer',
    });
  });
});
