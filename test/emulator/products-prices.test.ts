import { emulatorForFile, expectFixtureShape } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('products and prices through the stripe SDK', () => {
  it('filters prices by product, active, lookup keys, type and interval', async () => {
    const { stripe } = harness;
    const product = await stripe.products.create({ name: 'Filtered' });
    const other = await stripe.products.create({ name: 'Other' });
    const tag = Date.now();
    const monthly = await stripe.prices.create({
      product: product.id,
      currency: 'usd',
      unit_amount: 1000,
      recurring: { interval: 'month' },
      lookup_key: `monthly-${tag}`,
    });
    const yearly = await stripe.prices.create({
      product: product.id,
      currency: 'usd',
      unit_amount: 10000,
      recurring: { interval: 'year' },
      lookup_key: `yearly-${tag}`,
      active: false,
    });
    const once = await stripe.prices.create({ product: other.id, currency: 'eur', unit_amount: 500 });
    expectFixtureShape(monthly, 'price');
    const ids = (r: { data: { id: string }[] }) => r.data.map((p) => p.id);

    expect(ids(await stripe.prices.list({ product: product.id }))).toEqual([yearly.id, monthly.id]);
    expect(ids(await stripe.prices.list({ product: product.id, active: true }))).toEqual([monthly.id]);
    expect(ids(await stripe.prices.list({ product: product.id, active: false }))).toEqual([yearly.id]);
    expect(ids(await stripe.prices.list({ lookup_keys: [`monthly-${tag}`, `yearly-${tag}`] }))).toEqual([
      yearly.id,
      monthly.id,
    ]);
    expect(ids(await stripe.prices.list({ product: product.id, recurring: { interval: 'year' } }))).toEqual([
      yearly.id,
    ]);
    expect(ids(await stripe.prices.list({ product: other.id, type: 'one_time', currency: 'eur' }))).toEqual([
      once.id,
    ]);
    await expect(stripe.prices.list({ colour: 'red' } as never)).rejects.toMatchObject({
      statusCode: 400,
      message: 'Received unknown parameter: colour',
    });
  });

  it('lists products by active and ids, and pages with starting_after and ending_before', async () => {
    const { stripe } = harness;
    const a = await stripe.products.create({ name: 'A' });
    const b = await stripe.products.create({ name: 'B', active: false });
    const c = await stripe.products.create({ name: 'C' });
    expectFixtureShape(a, 'product');
    const ids = (r: { data: { id: string }[] }) => r.data.map((p) => p.id);
    expect(ids(await stripe.products.list({ ids: [a.id, b.id, c.id] }))).toEqual([c.id, b.id, a.id]);
    expect(ids(await stripe.products.list({ ids: [a.id, b.id, c.id], active: true }))).toEqual([c.id, a.id]);
    const first = await stripe.products.list({ ids: [a.id, b.id, c.id], limit: 1 });
    expect(first.has_more).toBe(true);
    expect(ids(await stripe.products.list({ ids: [a.id, b.id, c.id], starting_after: c.id }))).toEqual([
      b.id,
      a.id,
    ]);
    expect(ids(await stripe.products.list({ ids: [a.id, b.id, c.id], ending_before: a.id }))).toEqual([
      c.id,
      b.id,
    ]);
    const all = await stripe.products
      .list({ ids: [a.id, b.id, c.id], limit: 1 })
      .autoPagingToArray({ limit: 10 });
    expect(all.map((p) => p.id)).toEqual([c.id, b.id, a.id]);
  });
});
