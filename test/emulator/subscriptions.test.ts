import type Stripe from 'stripe';
import { customerWithCard, emulatorForFile, expectFixtureShape, monthlyPrice } from './emulator-sdk.js';

const harness = emulatorForFile();

const renew = async (id: string) => {
  const res = await harness.request('POST', `/_emulator/subscriptions/${id}/renew`);
  expect(res.status).toBe(200);
  return (await res.json()) as Stripe.Subscription;
};

/** Prorations made now (an item's lines) or earlier (pending invoice items billed on this invoice). */
const prorationLines = (invoice: Stripe.Invoice) =>
  invoice.lines.data.filter(
    (l) =>
      l.parent?.subscription_item_details?.proration === true ||
      l.parent?.invoice_item_details?.proration === true,
  );

describe('subscriptions through the stripe SDK', () => {
  it('creates a subscription of several items with quantities, invoiced line by line', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'several@example.com');
    const seat = await monthlyPrice(stripe, 1000);
    const addon = await monthlyPrice(stripe, 500);
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: seat.id, quantity: 3 }, { price: addon.id }],
      expand: ['latest_invoice'],
    });
    expect(subscription.status).toBe('active');
    expectFixtureShape(subscription, 'subscription');
    const items = subscription.items.data;
    expect(items.map((i) => [i.price.id, i.quantity])).toEqual([
      [seat.id, 3],
      [addon.id, 1],
    ]);
    for (const item of items) expectFixtureShape(item, 'subscription_item');
    const invoice = subscription.latest_invoice as Stripe.Invoice;
    expectFixtureShape(invoice, 'invoice');
    expect(invoice).toMatchObject({ status: 'paid', subtotal: 3500, total: 3500, amount_paid: 3500 });
    expect(invoice.lines.data.map((l) => [l.pricing?.price_details?.price, l.quantity, l.amount])).toEqual([
      [seat.id, 3, 3000],
      [addon.id, 1, 500],
    ]);
    for (const line of invoice.lines.data) expectFixtureShape(line, 'line_item');

    await expect(
      stripe.subscriptions.create({ customer: customer.id, items: [{ price: seat.id }, { price: seat.id }] }),
    ).rejects.toMatchObject({
      statusCode: 400,
      message: 'Cannot add multiple subscription items with the same price.',
    });
    const yearly = await monthlyPrice(stripe, 100, { recurring: { interval: 'year' } });
    await expect(
      stripe.subscriptions.create({
        customer: customer.id,
        items: [{ price: seat.id }, { price: yearly.id }],
      }),
    ).rejects.toMatchObject({ statusCode: 400, param: 'items[1][price]' });
  });

  it('changes an item’s quantity with prorations: pending until the renewal, invoiced at once, or none', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'seats@example.com');
    const seat = await monthlyPrice(stripe, 1000);
    const created = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: seat.id, quantity: 2 }],
    });
    const item = created.items.data[0]!;

    const preview = await stripe.invoices.createPreview({
      subscription: created.id,
      subscription_details: {
        items: [{ id: item.id, quantity: 5 }],
        proration_behavior: 'create_prorations',
      },
    });
    expectFixtureShape(preview, 'invoice');
    const previewed = prorationLines(preview);
    expect(previewed.map((l) => l.quantity)).toEqual([2, 5]);
    // Almost the whole month is left: a credit for 2 seats and a charge for 5, close to their full prices.
    expect(previewed[0]!.amount).toBeLessThanOrEqual(-1999);
    expect(previewed[1]!.amount).toBeGreaterThanOrEqual(4998);
    const next = preview.lines.data.filter((l) => !prorationLines(preview).includes(l));
    expect(next.map((l) => [l.quantity, l.amount])).toEqual([[5, 5000]]);
    expect((await stripe.subscriptions.retrieve(created.id)).items.data[0]!.quantity).toBe(2);

    const updated = await stripe.subscriptions.update(created.id, { items: [{ id: item.id, quantity: 5 }] });
    expect(updated.items.data.map((i) => [i.id, i.quantity])).toEqual([[item.id, 5]]);
    expect(updated.latest_invoice).toBe(created.latest_invoice);
    const renewed = await renew(created.id);
    const cycle = await stripe.invoices.retrieve(String(renewed.latest_invoice));
    const billed = prorationLines(cycle);
    expect(billed.map((l) => l.quantity)).toEqual([2, 5]);
    const prorated = billed.reduce((sum, l) => sum + l.amount, 0);
    expect(cycle.total).toBe(prorated + 5000);

    const now = await stripe.subscriptions.update(created.id, {
      items: [{ id: item.id, quantity: 4 }],
      proration_behavior: 'always_invoice',
    });
    const immediate = await stripe.invoices.retrieve(String(now.latest_invoice));
    expect(immediate.billing_reason).toBe('subscription_update');
    expect(prorationLines(immediate).map((l) => l.quantity)).toEqual([5, 4]);
    expect(immediate.total).toBeLessThan(0);

    const quiet = await stripe.subscriptions.update(created.id, {
      items: [{ id: item.id, quantity: 6 }],
      proration_behavior: 'none',
    });
    expect(quiet.latest_invoice).toBe(now.latest_invoice);
    const after = await renew(created.id);
    const plain = await stripe.invoices.retrieve(String(after.latest_invoice));
    expect(prorationLines(plain)).toEqual([]);
    expect(plain.total).toBe(6000);
  });

  it('adds and removes items by update; a trial prorates nothing', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'trial-items@example.com');
    const base = await monthlyPrice(stripe, 2000);
    const extra = await monthlyPrice(stripe, 300);
    const trialing = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: base.id }],
      trial_period_days: 14,
    });
    expect(trialing.status).toBe('trialing');
    const grown = await stripe.subscriptions.update(trialing.id, {
      items: [{ price: extra.id, quantity: 2 }],
      proration_behavior: 'always_invoice',
    });
    expect(grown.items.data.map((i) => [i.price.id, i.quantity])).toEqual([
      [base.id, 1],
      [extra.id, 2],
    ]);
    expect(grown.latest_invoice).toBe(trialing.latest_invoice);
    const preview = await stripe.invoices.createPreview({ subscription: trialing.id });
    expect(prorationLines(preview)).toEqual([]);
    expect(preview.total).toBe(2600);

    const shrunk = await stripe.subscriptions.update(trialing.id, {
      items: [{ id: grown.items.data[1]!.id, deleted: true }],
    });
    expect(shrunk.items.data.map((i) => i.price.id)).toEqual([base.id]);
    await expect(
      stripe.subscriptions.update(trialing.id, { items: [{ id: 'si_missing', quantity: 2 }] }),
    ).rejects.toMatchObject({ statusCode: 400, message: "No such subscription item: 'si_missing'" });
    const renewed = await renew(trialing.id);
    expect(renewed.status).toBe('active');
    const first = await stripe.invoices.retrieve(String(renewed.latest_invoice));
    expect(first.total).toBe(2000);
  });

  it('starts incomplete with an open invoice for default_incomplete without a card; active with one', async () => {
    const { stripe } = harness;
    const price = await monthlyPrice(stripe, 1200);
    const bare = await stripe.customers.create({ email: 'incomplete@example.com' });
    const incomplete = await stripe.subscriptions.create({
      customer: bare.id,
      items: [{ price: price.id }],
      payment_behavior: 'default_incomplete',
      expand: ['latest_invoice'],
    });
    expect(incomplete.status).toBe('incomplete');
    expect(incomplete.latest_invoice).toMatchObject({
      status: 'open',
      amount_due: 1200,
      amount_paid: 0,
      amount_remaining: 1200,
    });
    const types = (await stripe.events.list({ limit: 100 })).data
      .filter(
        (e) => (e.data.object as { id?: string }).id === (incomplete.latest_invoice as Stripe.Invoice).id,
      )
      .map((e) => e.type)
      .sort();
    expect(types).toEqual(['invoice.created', 'invoice.finalized']);

    const carded = await customerWithCard(harness, 'complete@example.com');
    const active = await stripe.subscriptions.create({
      customer: carded.id,
      items: [{ price: price.id }],
      payment_behavior: 'default_incomplete',
    });
    expect(active.status).toBe('active');
    expect(active.default_payment_method).toBe(carded.invoice_settings.default_payment_method);
  });

  it('applies a coupon to invoices and previews: discounts and total_discount_amounts', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'discount@example.com');
    const price = await monthlyPrice(stripe, 2500);
    const coupon = await stripe.coupons.create({ percent_off: 20, duration: 'forever' });
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: price.id }],
      discounts: [{ coupon: coupon.id }],
      expand: ['latest_invoice', 'discounts'],
    });
    const [discount] = subscription.discounts as Stripe.Discount[];
    expectFixtureShape(discount!, 'discount');
    expect(discount).toMatchObject({
      object: 'discount',
      source: { coupon: coupon.id, type: 'coupon' },
      subscription: subscription.id,
    });
    const invoice = subscription.latest_invoice as Stripe.Invoice;
    expect(invoice).toMatchObject({
      subtotal: 2500,
      total: 2000,
      amount_paid: 2000,
      discounts: [discount!.id],
      total_discount_amounts: [{ amount: 500, discount: discount!.id }],
    });
    const preview = await stripe.invoices.createPreview({
      customer: customer.id,
      subscription: subscription.id,
    });
    expect(preview).toMatchObject({ subtotal: 2500, total: 2000, amount_due: 2000 });
    expect(preview.total_discount_amounts).toEqual([{ amount: 500, discount: discount!.id }]);

    const once = await stripe.coupons.create({ amount_off: 1000, currency: 'usd', duration: 'once' });
    const onceSub = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: (await monthlyPrice(stripe, 2500)).id }],
      discounts: [{ coupon: once.id }],
      expand: ['latest_invoice'],
    });
    expect((onceSub.latest_invoice as Stripe.Invoice).total).toBe(1500);
    expect(onceSub.discounts).toEqual([]);
    expect((await stripe.invoices.createPreview({ subscription: onceSub.id })).total).toBe(2500);
  });

  it('searches subscriptions by status, customer and metadata; lists by any item’s price', async () => {
    const { stripe } = harness;
    const customer = await customerWithCard(harness, 'search-subs@example.com');
    const main = await monthlyPrice(stripe, 900);
    const side = await monthlyPrice(stripe, 100);
    const tag = `s${Date.now()}`;
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: main.id }, { price: side.id }],
      metadata: { tag },
    });
    const ids = (r: { data: Stripe.Subscription[] }) => r.data.map((s) => s.id);
    expect(ids(await stripe.subscriptions.search({ query: `metadata['tag']:'${tag}'` }))).toEqual([
      subscription.id,
    ]);
    const mine = await stripe.subscriptions.search({
      query: `customer:'${customer.id}' AND status:'active'`,
    });
    expect(ids(mine)).toContain(subscription.id);
    expect(mine.data.every((s) => s.customer === customer.id && s.status === 'active')).toBe(true);
    expect(
      ids(await stripe.subscriptions.search({ query: `metadata['tag']:'${tag}' AND status:'canceled'` })),
    ).toEqual([]);
    expect(ids(await stripe.subscriptions.list({ price: side.id }))).toEqual([subscription.id]);

    const expanded = await stripe.subscriptions.retrieve(subscription.id, {
      expand: ['customer', 'latest_invoice'],
    });
    expect((expanded.customer as Stripe.Customer).email).toBe('search-subs@example.com');
    expect((expanded.latest_invoice as Stripe.Invoice).object).toBe('invoice');
  });
});
