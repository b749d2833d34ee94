import type Stripe from 'stripe';
import { customerWithCard, emulatorForFile, expectFixtureShape, monthlyPrice } from './emulator-sdk.js';

const harness = emulatorForFile();

describe('coupons through the stripe SDK', () => {
  it('deletes a coupon: gone from the API, while a subscription already discounted keeps its discount', async () => {
    const { stripe } = harness;
    const coupon = await stripe.coupons.create({ percent_off: 50, duration: 'forever', name: 'Half' });
    expectFixtureShape(coupon, 'coupon');
    const customer = await customerWithCard(harness, 'coupon-del@example.com');
    const price = await monthlyPrice(stripe, 2000);
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: price.id }],
      discounts: [{ coupon: coupon.id }],
    });
    expect((await stripe.coupons.list({ limit: 100 })).data.map((c) => c.id)).toContain(coupon.id);

    const deleted = await stripe.coupons.del(coupon.id);
    expect(deleted).toEqual({ id: coupon.id, object: 'coupon', deleted: true });
    expectFixtureShape(deleted, 'deleted_coupon');
    await expect(stripe.coupons.retrieve(coupon.id)).rejects.toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
      message: `No such coupon: '${coupon.id}'`,
    });
    await expect(stripe.coupons.del(coupon.id)).rejects.toMatchObject({ statusCode: 404 });
    expect((await stripe.coupons.list({ limit: 100 })).data.map((c) => c.id)).not.toContain(coupon.id);
    await expect(
      stripe.subscriptions.create({
        customer: customer.id,
        items: [{ price: price.id }],
        discounts: [{ coupon: coupon.id }],
      }),
    ).rejects.toMatchObject({ statusCode: 404, param: 'discounts[0][coupon]' });

    const preview = await stripe.invoices.createPreview({ subscription: subscription.id });
    expect(preview.total).toBe(1000);
    const expanded = await stripe.subscriptions.retrieve(subscription.id, {
      expand: ['discounts.source.coupon'],
    });
    const discount = (expanded.discounts as Stripe.Discount[])[0]!;
    expect((discount.source.coupon as Stripe.Coupon).id).toBe(coupon.id);
  });
});
