import { withContext } from '../../src/db.js';
import { Customer } from '../../src/modules/customers/customer.entity.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan, payOnHostedPage, stripeFor } from '../helpers/stripe-fixtures.js';
import { type ReceivedWebhook, verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The outbound events of the billing moves: a plan change, and a subscription imported from Stripe
 * (made straight in the emulator), each announced to the app's endpoint like any other change.
 */
let server: TestServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  [server, receiver] = await Promise.all([startTestServer(), WebhookReceiver.start()]);
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

async function appWithEndpoint(tag: string) {
  const { appId, apiKey } = await server.createApp();
  const res = await server.http
    .post('/v1/webhook-endpoints')
    .set(auth(apiKey))
    .send({ url: `${receiver.url}/${tag}` });
  expect(res.status).toBe(201);
  await createPaidPlan(server, appId, {
    id: 'basic',
    name: 'Basic',
    unitAmount: 1000,
    features: { sso: false },
  });
  const pro = await createPaidPlan(server, appId, {
    id: 'pro',
    name: 'Pro',
    unitAmount: 3000,
    features: { sso: true },
  });
  return { appId, apiKey, secret: res.body.secret as string, proPriceId: pro.priceId };
}

async function arrived(secret: string, tag: string, type: string, match: (data: any) => boolean) {
  const found: ReceivedWebhook = await eventually(
    () =>
      receiver.received.find((r) => r.path === `/${tag}` && r.payload.type === type && match(r.payload.data)),
    { what: `a ${type} event at /${tag}`, timeoutMs: 20_000 },
  );
  expect(verify(secret, found)).toEqual(found.payload);
  return found.payload.data;
}

describe('outbound events of the billing moves', () => {
  it('announces a plan change: subscription.updated with the new plan, and entitlements.updated', async () => {
    const { apiKey, secret } = await appWithEndpoint('plan-change');
    const customer = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'move@example.com' });
    const session = await server.http.post('/v1/checkout/session').set(auth(apiKey)).send({
      planId: 'basic',
      customerId: customer.body.id,
      successUrl: 'https://s.example.com/',
      cancelUrl: 'https://s.example.com/',
    });
    expect((await payOnHostedPage(session.body.url)).status).toBe(303);
    const created = await arrived(
      secret,
      'plan-change',
      'subscription.created',
      (d) => d.customerId === customer.body.id,
    );
    await arrived(secret, 'plan-change', 'entitlements.updated', (d) => d.planName === 'Basic');

    const changed = await server.http
      .post(`/v1/subscriptions/${created.id}/change-plan`)
      .set(auth(apiKey))
      .send({ planId: 'pro' });
    expect(changed.status).toBe(200);
    const updated = await arrived(secret, 'plan-change', 'subscription.updated', (d) => d.plan.id === 'pro');
    expect(updated).toEqual(changed.body);
    const entitlements = await arrived(
      secret,
      'plan-change',
      'entitlements.updated',
      (d) => d.planName === 'Pro',
    );
    expect(entitlements).toMatchObject({
      customerId: customer.body.id,
      planName: 'Pro',
      features: { sso: true },
    });
  });

  it('announces a subscription imported from its notification as created', async () => {
    const { apiKey, secret, proPriceId } = await appWithEndpoint('imported');
    const customer = await server.http
      .post('/v1/customers')
      .set(auth(apiKey))
      .send({ email: 'dash@example.com' });
    const stripe = stripeFor(server);
    const stripeCustomer = await stripe.customers.create({ email: 'dash@example.com' });
    // Linked as a first checkout would link it; then the operator subscribes them in Stripe's dashboard.
    await withContext(server.deps.orm, () =>
      server.deps.orm.em.nativeUpdate(
        Customer,
        { id: customer.body.id },
        { paymentCustomerId: stripeCustomer.id },
      ),
    );
    const made = await stripe.subscriptions.create({
      customer: stripeCustomer.id,
      items: [{ price: proPriceId }],
    });
    const created = await arrived(
      secret,
      'imported',
      'subscription.created',
      (d) => d.customerId === customer.body.id,
    );
    expect(created).toMatchObject({
      plan: { id: 'pro', name: 'Pro' },
      status: 'active',
      organizationId: null,
    });
    await arrived(
      secret,
      'imported',
      'entitlements.updated',
      (d) => d.customerId === customer.body.id && d.planName === 'Pro',
    );
    expect(receiver.of('subscription.created', (d) => d.customerId === customer.body.id)).toHaveLength(1);
    expect(made.id).toMatch(/^sub_/);
  });
});
