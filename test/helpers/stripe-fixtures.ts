import { type AddressInfo, createServer } from 'node:net';
import Stripe from 'stripe';
import { withContext } from '../../src/db.js';
import { EMULATOR_SECRET_KEY } from '../../src/modules/payments/payments.runtime.js';
import { startTestServer, type TestServer } from './server.js';

/** The unmodified Stripe SDK pointed at the test server's in-process emulator. */
export function stripeFor(server: TestServer): Stripe {
  const base = new URL(server.payments.apiBase!);
  return new Stripe(EMULATOR_SECRET_KEY, {
    host: base.hostname,
    port: Number(base.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

/** A monthly price at the emulator and a plan of the app selling it (upserted with the admin token). */
export async function createPaidPlan(
  server: TestServer,
  appId: string,
  plan: {
    id: string;
    name?: string;
    trialDays?: number;
    unitAmount?: number;
    features?: Record<string, unknown>;
  },
): Promise<{ planId: string; priceId: string; productId: string }> {
  const stripe = stripeFor(server);
  const product = await stripe.products.create({ name: plan.name ?? plan.id });
  const price = await stripe.prices.create({
    product: product.id,
    currency: 'usd',
    unit_amount: plan.unitAmount ?? 2000,
    recurring: { interval: 'month' },
  });
  const res = await server.graphql(
    `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
    {
      appId,
      input: {
        id: plan.id,
        name: plan.name ?? plan.id,
        stripePriceId: price.id,
        trialDays: plan.trialDays ?? 0,
        features: plan.features ?? {},
      },
    },
    server.adminToken,
  );
  if (res.body.errors) throw new Error(`upsertPlan failed: ${JSON.stringify(res.body.errors)}`);
  return { planId: plan.id, priceId: price.id, productId: product.id };
}

/** A customer session token, issued through the core as a completed magic-link login would. */
export async function sessionTokenFor(
  server: TestServer,
  appId: string,
  customerId: string,
  organizationId?: string,
): Promise<string> {
  const { token } = await withContext(server.deps.orm, () =>
    server.services.sessions.issue({ appId, customerId, ...(organizationId ? { organizationId } : {}) }),
  );
  return token;
}

/**
 * Opens the hosted checkout page like a browser, fills its form and presses Pay. Returns the answer to
 * the form post (303 to the success URL when paid) without following it.
 */
export async function payOnHostedPage(url: string, form: Record<string, string> = {}): Promise<Response> {
  const page = await fetch(url);
  if (page.status !== 200) throw new Error(`checkout page answered ${page.status}`);
  const html = await page.text();
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error('the checkout page has no payment form');
  const fields = { ...form };
  if (html.includes('name="card_number"')) fields.card_number ??= '4242 4242 4242 4242';
  if (html.includes('name="email"')) fields.email ??= 'payer@example.com';
  return fetch(new URL(action, url), {
    method: 'POST',
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
}

/** A signed notification as Stripe would send it, for posting to `/v1/webhooks/stripe`. */
export function signedNotification(
  server: TestServer,
  event: Record<string, unknown>,
): { body: string; signature: string } {
  const body = JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret: server.payments.webhookSecret,
  });
  return { body, signature };
}

/** A Tollgate whose Stripe is a port that was just free and is now closed: every call is refused. */
export async function startServerWithUnreachableStripe(): Promise<TestServer> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return startTestServer({
    env: {
      STRIPE_SECRET_KEY: 'sk_test_unreachable',
      STRIPE_WEBHOOK_SECRET: 'whsec_unreachable',
      STRIPE_API_BASE: `http://127.0.0.1:${port}`,
    },
  });
}
