import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { StripeEmulator } from '../../src/stripe-emulator/stripe-emulator.js';
import { eventually } from '../helpers/eventually.js';

const WEBHOOK_SECRET = 'whsec_emulator_test_secret';

interface Received {
  readonly event: Stripe.Event;
}

/** A webhook endpoint that refuses the first `failures` deliveries of each event, then verifies and keeps them. */
async function startReceiver(failures: number) {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const event = Stripe.webhooks.constructEvent(
      raw,
      String(req.headers['stripe-signature']),
      WEBHOOK_SECRET,
    );
    const n = (attempts.get(event.id) ?? 0) + 1;
    attempts.set(event.id, n);
    if (n <= failures) {
      res.writeHead(500).end();
      return;
    }
    received.push({ event });
    res.writeHead(200).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, received, attempts, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function sdkFor(emulator: StripeEmulator): Stripe {
  const url = new URL(emulator.url);
  return new Stripe('sk_test_emulator', {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

let emulator: StripeEmulator;
let stripe: Stripe;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver(2);
  emulator = await StripeEmulator.start({
    webhook: { url: receiver.url, secret: WEBHOOK_SECRET },
    retry: { attempts: 5, baseDelayMs: 20, maxDelayMs: 100 },
  });
  stripe = sdkFor(emulator);
});

afterAll(async () => {
  await emulator.close();
  await receiver.close();
});

async function createPrice(trialless = true) {
  const product = await stripe.products.create({ name: `Pro ${trialless ? 'monthly' : ''}` });
  return stripe.prices.create({
    product: product.id,
    currency: 'usd',
    unit_amount: 1500,
    recurring: { interval: 'month' },
  });
}

/** Submits the hosted page's form as a browser would; returns the redirect. */
async function pay(url: string, form: Record<string, string>) {
  const page = await fetch(url);
  expect(page.status).toBe(200);
  const html = await page.text();
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  expect(action).toBeDefined();
  return fetch(new URL(action!, url), {
    method: 'POST',
    body: new URLSearchParams(form),
    redirect: 'manual',
  });
}

describe('Stripe emulator through the stripe SDK', () => {
  it('creates, retrieves, updates and lists customers with Stripe metadata rules', async () => {
    const created = await stripe.customers.create({
      email: 'ann@example.com',
      name: 'Ann',
      metadata: { a: '1', b: '2' },
    });
    expect(created).toMatchObject({
      object: 'customer',
      email: 'ann@example.com',
      name: 'Ann',
      metadata: { a: '1', b: '2' },
    });
    expect(created.id).toMatch(/^cus_/);
    const updated = await stripe.customers.update(created.id, { metadata: { a: '', c: '3' } });
    expect(updated.metadata).toEqual({ b: '2', c: '3' });
    const listed = await stripe.customers.list({ email: 'ann@example.com' });
    expect(listed.data.map((c) => c.id)).toEqual([created.id]);
  });

  it('answers an unknown object with Stripe error shape and type', async () => {
    await expect(stripe.customers.retrieve('cus_missing')).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      statusCode: 404,
      code: 'resource_missing',
      message: "No such customer: 'cus_missing'",
    });
  });

  it('refuses unknown parameters like Stripe', async () => {
    await expect(stripe.customers.create({ emial: 'x@example.com' } as never)).rejects.toMatchObject({
      statusCode: 400,
      message: 'Received unknown parameter: emial',
      param: 'emial',
    });
  });

  it('refuses a live or missing secret key with 401', async () => {
    const url = new URL(emulator.url);
    const live = new Stripe('sk_live_nope', {
      host: url.hostname,
      port: Number(url.port),
      protocol: 'http',
      maxNetworkRetries: 0,
    });
    await expect(live.customers.list()).rejects.toMatchObject({
      type: 'StripeAuthenticationError',
      statusCode: 401,
    });
  });

  it('replays the first answer for a repeated idempotency key', async () => {
    const first = await stripe.customers.create({ email: 'idem@example.com' }, { idempotencyKey: 'key-1' });
    const second = await stripe.customers.create({ email: 'idem@example.com' }, { idempotencyKey: 'key-1' });
    expect(second.id).toBe(first.id);
    expect((await stripe.customers.list({ email: 'idem@example.com' })).data).toHaveLength(1);
  });

  it('runs a checkout through the hosted page: subscription, invoice, redirect and signed webhooks with retries', async () => {
    const price = await createPrice();
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      line_items: [{ price: price.id, quantity: 1 }],
      customer_email: 'buyer@example.com',
      success_url: 'https://app.example.com/done?session={CHECKOUT_SESSION_ID}',
      cancel_url: 'https://app.example.com/cancel',
      metadata: { tollgate_app_id: 'app_x' },
      subscription_data: { metadata: { source: 'test' } },
    });
    expect(session).toMatchObject({
      object: 'checkout.session',
      status: 'open',
      mode: 'subscription',
      customer: null,
    });
    expect(session.url).toBe(`${emulator.url}/checkout/${session.id}`);

    const page = await (await fetch(session.url!)).text();
    expect(page).toContain('<a id="cancel" href="https://app.example.com/cancel">');
    expect(page).toContain('15.00 USD / month');

    const res = await pay(session.url!, { name: 'Buyer', card_number: '4242 4242 4242 4242' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`https://app.example.com/done?session=${session.id}`);

    const completed = await stripe.checkout.sessions.retrieve(session.id);
    expect(completed).toMatchObject({ status: 'complete', payment_status: 'paid' });
    const subscription = await stripe.subscriptions.retrieve(String(completed.subscription));
    expect(subscription).toMatchObject({
      status: 'active',
      customer: completed.customer,
      metadata: { source: 'test' },
      cancel_at_period_end: false,
      trial_end: null,
    });
    expect(subscription.items.data[0]!.price.id).toBe(price.id);
    expect(subscription.items.data[0]!.current_period_end).toBeGreaterThan(
      Math.floor(Date.now() / 1000) + 27 * 86400,
    );
    const invoices = await stripe.invoices.list({ customer: String(completed.customer) });
    expect(invoices.data).toHaveLength(1);
    expect(invoices.data[0]).toMatchObject({ status: 'paid', amount_paid: 1500, currency: 'usd' });

    // The receiver refuses each event twice: it arrives on the third attempt, signed and verifiable.
    const event = await eventually(() =>
      receiver.received.find(
        (r) =>
          r.event.type === 'checkout.session.completed' &&
          (r.event.data.object as Stripe.Checkout.Session).id === session.id,
      ),
    );
    expect(receiver.attempts.get(event.event.id)).toBe(3);
    expect((event.event.data.object as Stripe.Checkout.Session).subscription).toBe(subscription.id);
    const types = await eventually(() => {
      const seen = receiver.received.filter((r) => {
        const object = r.event.data.object as { id?: string; subscription?: string; customer?: string };
        return object.customer === completed.customer || object.id === completed.customer;
      });
      return seen.length >= 6 ? seen.map((r) => r.event.type).sort() : undefined;
    });
    expect(types).toEqual([
      'checkout.session.completed',
      'customer.created',
      'customer.subscription.created',
      'invoice.created',
      'invoice.finalized',
      'invoice.paid',
    ]);
  });

  it('starts a trial without a card when the session collects payment methods only if required', async () => {
    const price = await createPrice();
    const customer = await stripe.customers.create({ email: 'trial@example.com' });
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customer.id,
      line_items: [{ price: price.id, quantity: 1 }],
      success_url: 'http://localhost:3000/ok',
      cancel_url: 'http://localhost:3000/cancel',
      payment_method_collection: 'if_required',
      subscription_data: { trial_period_days: 14 },
    });
    const html = await (await fetch(session.url!)).text();
    expect(html).not.toContain('card_number');
    expect(html).toContain('14-day free trial');
    const res = await pay(session.url!, {});
    expect(res.status).toBe(303);
    const done = await stripe.checkout.sessions.retrieve(session.id);
    expect(done.payment_status).toBe('no_payment_required');
    const subscription = await stripe.subscriptions.retrieve(String(done.subscription));
    expect(subscription.status).toBe('trialing');
    expect(subscription.default_payment_method).toBeNull();
    expect(subscription.trial_end).toBe(subscription.items.data[0]!.current_period_end);
  });

  it('requires the billing address and a valid card on the page when asked', async () => {
    const price = await createPrice();
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer_email: 'address@example.com',
      line_items: [{ price: price.id }],
      success_url: 'http://localhost:3000/ok',
      cancel_url: 'http://localhost:3000/cancel',
      billing_address_collection: 'required',
    });
    const incomplete = await pay(session.url!, { name: 'A', card_number: '4242424242424242' });
    expect(incomplete.status).toBe(400);
    expect(await incomplete.text()).toContain('Your billing address is incomplete.');
    const declined = await pay(session.url!, {
      name: 'A',
      card_number: '4000000000000002',
      address_line1: '1 Main St',
      address_city: 'Springfield',
      address_postal_code: '12345',
      address_country: 'us',
    });
    expect(declined.status).toBe(402);
    const ok = await pay(session.url!, {
      name: 'A',
      card_number: '4242424242424242',
      address_line1: '1 Main St',
      address_city: 'Springfield',
      address_postal_code: '12345',
      address_country: 'us',
    });
    expect(ok.status).toBe(303);
    const done = await stripe.checkout.sessions.retrieve(session.id);
    expect(done.customer_details?.address).toMatchObject({ line1: '1 Main St', country: 'US' });
    const again = await fetch(`${emulator.url}/checkout/${session.id}/pay`, {
      method: 'POST',
      redirect: 'manual',
    });
    expect(again.status).toBe(409);
  });

  it('applies promotion codes with their restrictions: expiry, redemptions and products', async () => {
    const price = await createPrice();
    const other = await createPrice();
    const coupon = await stripe.coupons.create({
      percent_off: 20,
      duration: 'once',
      applies_to: { products: [String(price.product)] },
    });
    const base = {
      mode: 'subscription' as const,
      customer_email: 'promo@example.com',
      success_url: 'http://localhost:3000/ok',
      cancel_url: 'http://localhost:3000/cancel',
    };
    const good = await stripe.promotionCodes.create({
      promotion: { type: 'coupon', coupon: coupon.id },
      code: `SAVE${Date.now()}`,
      max_redemptions: 1,
    });
    expect(good.promotion.coupon).toBe(coupon.id);
    const found = await stripe.promotionCodes.list({
      code: good.code.toLowerCase(),
      expand: ['data.promotion.coupon'],
    });
    expect((found.data[0]!.promotion.coupon as Stripe.Coupon).applies_to?.products).toEqual([price.product]);

    await expect(
      stripe.checkout.sessions.create({
        ...base,
        line_items: [{ price: other.id }],
        discounts: [{ promotion_code: good.id }],
      }),
    ).rejects.toMatchObject({
      statusCode: 400,
      message: `The promotion code \`${good.code}\` cannot be applied to the products in this session.`,
    });

    const session = await stripe.checkout.sessions.create({
      ...base,
      line_items: [{ price: price.id }],
      discounts: [{ promotion_code: good.id }],
    });
    expect(session.amount_total).toBe(1200);
    expect((await pay(session.url!, { card_number: '4242424242424242' })).status).toBe(303);
    expect((await stripe.promotionCodes.retrieve(good.id)).times_redeemed).toBe(1);
    expect((await stripe.coupons.retrieve(coupon.id)).times_redeemed).toBe(1);
    const invoices = await stripe.invoices.list({
      subscription: String((await stripe.checkout.sessions.retrieve(session.id)).subscription),
    });
    expect(invoices.data[0]!.amount_paid).toBe(1200);

    await expect(
      stripe.checkout.sessions.create({
        ...base,
        line_items: [{ price: price.id }],
        discounts: [{ promotion_code: good.id }],
      }),
    ).rejects.toMatchObject({
      message: `The promotion code \`${good.code}\` has reached its maximum number of redemptions.`,
    });

    const expired = await stripe.promotionCodes.create({
      promotion: { type: 'coupon', coupon: coupon.id },
      code: `OLD${Date.now()}`,
      expires_at: Math.floor(Date.now() / 1000) - 10,
    });
    await expect(
      stripe.checkout.sessions.create({
        ...base,
        line_items: [{ price: price.id }],
        discounts: [{ promotion_code: expired.id }],
      }),
    ).rejects.toMatchObject({ message: `The promotion code \`${expired.code}\` has expired.` });
  });

  it('updates (cancel at period end, pause collection), cancels and lists subscriptions', async () => {
    const price = await createPrice();
    const customer = await stripe.customers.create({ email: 'subs@example.com' });
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customer.id,
      line_items: [{ price: price.id }],
      success_url: 'http://localhost:3000/ok',
      cancel_url: 'http://localhost:3000/cancel',
    });
    await pay(session.url!, { card_number: '4242424242424242' });
    const id = String((await stripe.checkout.sessions.retrieve(session.id)).subscription);

    const atEnd = await stripe.subscriptions.update(id, { cancel_at_period_end: true });
    expect(atEnd).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect(atEnd.cancel_at).toBe(atEnd.items.data[0]!.current_period_end);
    const kept = await stripe.subscriptions.update(id, { cancel_at_period_end: false });
    expect(kept).toMatchObject({ cancel_at_period_end: false, canceled_at: null });

    const paused = await stripe.subscriptions.update(id, { pause_collection: { behavior: 'void' } });
    expect(paused.pause_collection).toEqual({ behavior: 'void', resumes_at: null });
    const resumed = await stripe.subscriptions.update(id, { pause_collection: '' });
    expect(resumed.pause_collection).toBeNull();

    expect((await stripe.subscriptions.list({ customer: customer.id })).data.map((s) => s.id)).toEqual([id]);
    const canceled = await stripe.subscriptions.cancel(id);
    expect(canceled.status).toBe('canceled');
    expect(canceled.canceled_at).not.toBeNull();
    expect((await stripe.subscriptions.list({ customer: customer.id })).data).toEqual([]);
    expect(
      (await stripe.subscriptions.list({ customer: customer.id, status: 'all' })).data.map((s) => s.id),
    ).toEqual([id]);

    const deleted = await eventually(() =>
      receiver.received.find(
        (r) =>
          r.event.type === 'customer.subscription.deleted' &&
          (r.event.data.object as Stripe.Subscription).id === id,
      ),
    );
    expect((deleted.event.data.object as Stripe.Subscription).status).toBe('canceled');
  });

  it('renews a subscription on request, declining the payment when asked', async () => {
    const price = await createPrice();
    const customer = await stripe.customers.create({ email: 'renew@example.com' });
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customer.id,
      line_items: [{ price: price.id }],
      success_url: 'http://localhost:3000/ok',
      cancel_url: 'http://localhost:3000/cancel',
    });
    await pay(session.url!, { card_number: '4242424242424242' });
    const id = String((await stripe.checkout.sessions.retrieve(session.id)).subscription);
    const renew = (fail: boolean) =>
      fetch(`${emulator.url}/_emulator/subscriptions/${id}/renew`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk_test_emulator' },
        body: new URLSearchParams({ fail: String(fail) }),
      });
    expect((await (await renew(true)).json()).status).toBe('past_due');
    const failed = (await stripe.invoices.list({ subscription: id })).data[0]!;
    expect(failed).toMatchObject({
      status: 'open',
      amount_paid: 0,
      amount_remaining: 1500,
      billing_reason: 'subscription_cycle',
    });
    expect((await (await renew(false)).json()).status).toBe('active');
    const unauthenticated = await fetch(`${emulator.url}/_emulator/subscriptions/${id}/renew`, {
      method: 'POST',
    });
    expect(unauthenticated.status).toBe(401);
  });

  it('gives up after the configured number of attempts', async () => {
    const failing = await startReceiver(100);
    const lonely = await StripeEmulator.start({
      webhook: { url: failing.url, secret: WEBHOOK_SECRET },
      retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 20 },
    });
    try {
      const customer = await sdkFor(lonely).customers.create({ email: 'x@example.com' });
      const attempts = await eventually(() => {
        const d = lonely.deliveries.filter((x) => x.status === 500);
        return d.length >= 3 ? d : undefined;
      });
      expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
      // Nothing scheduled and nothing on the wire: no fourth attempt can come.
      await eventually(() => (lonely.pendingDeliveries === 0 ? true : undefined), {
        what: 'the sender to give up',
      });
      expect(lonely.deliveries).toHaveLength(3);
      expect(customer.id).toMatch(/^cus_/);
    } finally {
      await lonely.close();
      await failing.close();
    }
  });
});
