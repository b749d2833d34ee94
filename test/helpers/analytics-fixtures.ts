import type Stripe from 'stripe';
import { eventually } from './eventually.js';
import type { TestServer } from './server.js';
import { payOnHostedPage, stripeFor } from './stripe-fixtures.js';

const URLS = { successUrl: 'https://shop.example.com/ok', cancelUrl: 'https://shop.example.com/cancel' };
const DAY_MS = 86_400_000;

/** A UTC day, `offset` days from today, as `YYYY-MM-DD`. */
export const day = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);

/** Yesterday to tomorrow: the range holds today's movements even if the test runs across midnight. */
export const RANGE = () => ({ from: day(-1), to: day(1) });

export interface PriceTerms {
  unitAmount: number;
  interval?: 'day' | 'week' | 'month' | 'year';
  intervalCount?: number;
  currency?: string;
  trialDays?: number;
}

/**
 * Subscriptions bought the way an app's users buy them (Tollgate's checkout, paid on the emulator's
 * hosted page, imported from Stripe's notifications) and the MRR ledger they leave, read back.
 */
export class AnalyticsFixtures {
  readonly stripe: Stripe;

  constructor(private readonly server: TestServer) {
    this.stripe = stripeFor(server);
  }

  /** Every notification the emulator has to send, delivered (or given up). */
  settled(): Promise<true> {
    return eventually(() => (this.server.payments.emulator!.pendingDeliveries === 0 ? true : undefined), {
      what: 'the emulator to deliver every notification',
    });
  }

  /** A plan of the app at a new Stripe price. */
  async plan(appId: string, id: string, terms: PriceTerms): Promise<{ priceId: string; productId: string }> {
    const product = await this.stripe.products.create({ name: id });
    const price = await this.stripe.prices.create({
      product: product.id,
      currency: terms.currency ?? 'usd',
      unit_amount: terms.unitAmount,
      recurring: { interval: terms.interval ?? 'month', interval_count: terms.intervalCount ?? 1 },
    });
    const res = await this.server.graphql(
      `mutation($appId: ID!, $input: PlanInput!) { upsertPlan(appId: $appId, input: $input) { id } }`,
      {
        appId,
        input: { id, name: id, stripePriceId: price.id, trialDays: terms.trialDays ?? 0, features: {} },
      },
      this.server.adminToken,
    );
    if (res.body.errors) throw new Error(`upsertPlan failed: ${JSON.stringify(res.body.errors)}`);
    return { priceId: price.id, productId: product.id };
  }

  async customer(apiKey: string): Promise<string> {
    const res = await this.server.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: `buyer-${Math.random().toString(36).slice(2)}@example.com` });
    if (res.status !== 201) throw new Error(`creating a customer answered ${res.status}`);
    return res.body.id;
  }

  /** Buys `planId` through Tollgate's checkout, pays it on the hosted page, waits for the subscription. */
  async subscribe(
    apiKey: string,
    customerId: string,
    planId: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ id: string; stripeSubscriptionId: string }> {
    const res = await this.server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ customerId, planId, ...URLS, ...extra });
    if (res.status !== 200) throw new Error(`checkout answered ${res.status}: ${JSON.stringify(res.body)}`);
    const paid = await payOnHostedPage(res.body.url);
    if (paid.status !== 303) throw new Error(`paying answered ${paid.status}`);
    const subscription = await eventually(
      async () => {
        const current = await this.server.http
          .get(`/v1/subscriptions/current?customerId=${customerId}`)
          .set('authorization', `Bearer ${apiKey}`);
        return current.status === 200 ? current.body : undefined;
      },
      { what: 'the subscription to be imported' },
    );
    await this.settled();
    const [row] = await this.sql<{ stripe_subscription_id: string }>(
      'select stripe_subscription_id from subscription where id = ?',
      [subscription.id],
    );
    return { id: subscription.id, stripeSubscriptionId: row!.stripe_subscription_id };
  }

  sql<T>(text: string, params: unknown[]): Promise<T[]> {
    return this.server.deps.orm.em.getConnection().execute<T[]>(text, params, 'all');
  }

  /** The app's movements in the order they were recorded. */
  async movements(appId: string) {
    const rows = await this.sql<{
      kind: string | null;
      cause: string;
      mrr_before: string;
      mrr_after: string;
      converted: boolean;
      backfilled: boolean;
    }>(
      `select kind, cause, mrr_before::text, mrr_after::text, converted, backfilled from mrr_movement
        where app_id = ? order by occurred_at, id`,
      [appId],
    );
    return rows.map((r) => ({
      kind: r.kind,
      cause: r.cause,
      before: Number(r.mrr_before),
      after: Number(r.mrr_after),
      ...(r.converted ? { converted: true } : {}),
      ...(r.backfilled ? { backfilled: true } : {}),
    }));
  }

  analytics(apiKey: string, query: Record<string, string>) {
    return this.server.http.get('/v1/analytics').query(query).set('authorization', `Bearer ${apiKey}`);
  }
}
