import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A `billing_period` allowance follows the subscription's billing anchor through a renewal at the
 * bundled Stripe emulator: the renewal's notification moves the period, and the usage starts again.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe('billing periods across a renewal', () => {
  it('starts a new period with the full allowance once the renewal reaches Tollgate', async () => {
    const { appId, apiKey } = await server.createApp();
    const billing = new BillingFixtures(server, appId);
    const plan = await billing.plan({ features: { calls: { limit: 10, reset: 'billing_period' } } as never });
    const customer = await billing.customer();
    const { stripeSubscriptionId } = await billing.subscription(
      { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! },
      plan,
    );
    const remote = await billing.stripe.subscriptions.retrieve(stripeSubscriptionId);
    const firstEnd = new Date(remote.items.data[0]!.current_period_end * 1000).toISOString();
    const auth = { authorization: `Bearer ${apiKey}` };
    const used = await server.http
      .post('/v1/usage')
      .set(auth)
      .send({ customerId: customer.id, feature: 'calls', amount: 4 });
    expect(used.body.balance).toEqual({
      limit: 10,
      granted: 0,
      used: 4,
      remaining: 6,
      overage: 0,
      resetsAt: firstEnd,
    });

    // The emulator counts in whole seconds: renew in a later second than the subscription began.
    const began = remote.items.data[0]!.current_period_start;
    await eventually(() => (Math.floor(Date.now() / 1000) > began ? true : undefined));
    const renewed = server.payments.emulator!.renewSubscription(stripeSubscriptionId);
    const secondEnd = new Date((renewed.items as any).data[0].current_period_end * 1000).toISOString();
    expect(secondEnd > firstEnd).toBe(true);

    const balance = await eventually(
      async () => {
        const res = await server.http.get(`/v1/balances?customerId=${customer.id}`).set(auth);
        return res.body.data[0].resetsAt === secondEnd ? res.body.data[0] : undefined;
      },
      { what: 'the renewal to reach Tollgate', timeoutMs: 20_000 },
    );
    expect(balance).toEqual({
      feature: 'calls',
      limit: 10,
      granted: 0,
      used: 0,
      remaining: 10,
      overage: 0,
      resetsAt: secondEnd,
    });
  });
});
