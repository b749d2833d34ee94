import type Stripe from 'stripe';
import { customerWithCard, emulatorForFile, expectFixtureShape } from './emulator-sdk.js';

const harness = emulatorForFile();

async function meteredPrice(stripe: Stripe, eventName: string, unitAmount: number) {
  const meter = await stripe.billing.meters.create({
    display_name: `Calls ${eventName}`,
    event_name: eventName,
    default_aggregation: { formula: 'sum' },
  });
  const product = await stripe.products.create({ name: `Usage ${eventName}` });
  const price = await stripe.prices.create({
    product: product.id,
    currency: 'usd',
    unit_amount: unitAmount,
    recurring: { interval: 'month', usage_type: 'metered', meter: meter.id },
  });
  return { meter, price };
}

describe('billing meters through the stripe SDK', () => {
  it('creates, retrieves and lists meters in the shape of Stripe’s fixture', async () => {
    const { stripe } = harness;
    const eventName = `api_calls_${Date.now()}`;
    const meter = await stripe.billing.meters.create({
      display_name: 'API calls',
      event_name: eventName,
      default_aggregation: { formula: 'count' },
      customer_mapping: { type: 'by_id', event_payload_key: 'stripe_customer_id' },
    });
    expectFixtureShape(meter, 'billing.meter');
    expect(meter).toMatchObject({
      object: 'billing.meter',
      status: 'active',
      event_name: eventName,
      default_aggregation: { formula: 'count' },
      value_settings: { event_payload_key: 'value' },
    });
    expect(await stripe.billing.meters.retrieve(meter.id)).toEqual(meter);
    const listed = await stripe.billing.meters.list({ status: 'active', limit: 100 });
    expect(listed.data.map((m) => m.id)).toContain(meter.id);
    await expect(
      stripe.billing.meters.create({
        display_name: 'Again',
        event_name: eventName,
        default_aggregation: { formula: 'sum' },
      }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'event_name' });
    await expect(stripe.billing.meters.retrieve('mtr_missing')).rejects.toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
    });
  });

  it('records meter events once per identifier and sums them per customer', async () => {
    const { stripe } = harness;
    const eventName = `tokens_${Date.now()}`;
    const { meter } = await meteredPrice(stripe, eventName, 2);
    const customer = await stripe.customers.create({ email: 'usage@example.com' });
    const start = Math.floor(Date.now() / 1000) - 60;
    const event = await stripe.billing.meterEvents.create({
      event_name: eventName,
      payload: { stripe_customer_id: customer.id, value: '7' },
      identifier: `${eventName}-1`,
    });
    expectFixtureShape(event, 'billing.meter_event');
    expect(event).toMatchObject({
      object: 'billing.meter_event',
      identifier: `${eventName}-1`,
      payload: { value: '7' },
    });
    const again = await stripe.billing.meterEvents.create({
      event_name: eventName,
      payload: { stripe_customer_id: customer.id, value: '7' },
      identifier: `${eventName}-1`,
    });
    expect(again).toEqual(event);
    await stripe.billing.meterEvents.create({
      event_name: eventName,
      payload: { stripe_customer_id: customer.id, value: '5' },
    });

    const summaries = await stripe.billing.meters.listEventSummaries(meter.id, {
      customer: customer.id,
      start_time: start,
      end_time: start + 3600,
    });
    expect(summaries.data).toHaveLength(1);
    expectFixtureShape(summaries.data[0]!, 'billing.meter_event_summary');
    expect(summaries.data[0]).toMatchObject({ aggregated_value: 12, meter: meter.id });

    await expect(
      stripe.billing.meterEvents.create({
        event_name: 'no_such_meter',
        payload: { stripe_customer_id: customer.id, value: '1' },
      }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'event_name' });
    await expect(
      stripe.billing.meterEvents.create({ event_name: eventName, payload: { value: '1' } }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'payload[stripe_customer_id]' });
  });

  it('cancels a meter event by its identifier, so the meter no longer counts it', async () => {
    const { stripe } = harness;
    const eventName = `cancels_${Date.now()}`;
    const { meter } = await meteredPrice(stripe, eventName, 2);
    const customer = await stripe.customers.create({ email: 'cancel@example.com' });
    const start = Math.floor(Date.now() / 1000) - 60;
    for (const [identifier, value] of [
      [`${eventName}-a`, '4'],
      [`${eventName}-b`, '6'],
    ] as const) {
      await stripe.billing.meterEvents.create({
        event_name: eventName,
        identifier,
        payload: { stripe_customer_id: customer.id, value },
      });
    }
    const adjustment = await stripe.billing.meterEventAdjustments.create({
      event_name: eventName,
      type: 'cancel',
      cancel: { identifier: `${eventName}-a` },
    });
    expect(adjustment).toEqual({
      object: 'billing.meter_event_adjustment',
      cancel: { identifier: `${eventName}-a` },
      event_name: eventName,
      livemode: false,
      status: 'complete',
      type: 'cancel',
    });
    // Cancelling again changes nothing.
    await stripe.billing.meterEventAdjustments.create({
      event_name: eventName,
      type: 'cancel',
      cancel: { identifier: `${eventName}-a` },
    });
    const summaries = await stripe.billing.meters.listEventSummaries(meter.id, {
      customer: customer.id,
      start_time: start,
      end_time: start + 3600,
    });
    expect(summaries.data[0]).toMatchObject({ aggregated_value: 6 });
    await expect(
      stripe.billing.meterEventAdjustments.create({
        event_name: eventName,
        type: 'cancel',
        cancel: { identifier: 'no_such_event' },
      }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'cancel[identifier]' });
    await expect(
      stripe.billing.meterEventAdjustments.create({ event_name: eventName, type: 'cancel' }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'cancel[identifier]' });
  });

  it('bills a metered item’s usage of the ended period on renewal, beside the licensed items', async () => {
    const { stripe } = harness;
    const eventName = `requests_${Date.now()}`;
    const { price: usage } = await meteredPrice(stripe, eventName, 3);
    expect(usage.recurring).toMatchObject({ usage_type: 'metered', meter: expect.stringMatching(/^mtr_/) });
    const customer = await customerWithCard(harness, 'metered@example.com');
    const product = await stripe.products.create({ name: 'Seats' });
    const seat = await stripe.prices.create({
      product: product.id,
      currency: 'usd',
      unit_amount: 1000,
      recurring: { interval: 'month' },
    });

    await expect(
      stripe.subscriptions.create({ customer: customer.id, items: [{ price: usage.id, quantity: 2 }] }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'items[0][quantity]' });
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: seat.id, quantity: 2 }, { price: usage.id }],
      expand: ['latest_invoice'],
    });
    const metered = subscription.items.data.find((i) => i.price.id === usage.id)!;
    expect(metered.quantity).toBeUndefined();
    // Usage is billed in arrears: the first invoice has the seats only.
    expect((subscription.latest_invoice as Stripe.Invoice).total).toBe(2000);

    for (const value of ['10', '15']) {
      await stripe.billing.meterEvents.create({
        event_name: eventName,
        payload: { stripe_customer_id: customer.id, value },
      });
    }
    const preview = await stripe.invoices.createPreview({ subscription: subscription.id });
    expect(preview.lines.data.map((l) => [l.pricing?.price_details?.price, l.quantity, l.amount])).toEqual([
      [usage.id, 25, 75],
      [seat.id, 2, 2000],
    ]);

    const res = await harness.request('POST', `/_emulator/subscriptions/${subscription.id}/renew`);
    const renewed = (await res.json()) as Stripe.Subscription;
    const invoice = await stripe.invoices.retrieve(String(renewed.latest_invoice));
    expect(invoice).toMatchObject({ billing_reason: 'subscription_cycle', status: 'paid', total: 2075 });
    expect(invoice.lines.data.map((l) => [l.pricing?.price_details?.price, l.quantity, l.amount])).toEqual([
      [usage.id, 25, 75],
      [seat.id, 2, 2000],
    ]);
    // The new period starts empty.
    const next = await stripe.invoices.createPreview({ subscription: subscription.id });
    expect(next.lines.data.find((l) => l.pricing?.price_details?.price === usage.id)?.quantity).toBe(0);
  });

  it('refuses a metered price without a meter', async () => {
    const { stripe } = harness;
    const product = await stripe.products.create({ name: 'No meter' });
    await expect(
      stripe.prices.create({
        product: product.id,
        currency: 'usd',
        unit_amount: 1,
        recurring: { interval: 'month', usage_type: 'metered' },
      }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'recurring[meter]' });
  });
});
