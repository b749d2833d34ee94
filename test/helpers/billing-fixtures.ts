import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { newId } from '../../src/core/ids.js';
import type { OrgRole } from '../../src/core/principal.js';
import { withContext } from '../../src/db.js';
import { Customer } from '../../src/modules/customers/customer.entity.js';
import { Organization, OrganizationMember } from '../../src/modules/organizations/organization.entity.js';
import { Plan } from '../../src/modules/plans/plan.entity.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import type { Core } from './services.js';

/**
 * Billing states for lifecycle, history, invoice and coupon tests: objects are made at Tollgate's
 * own Stripe emulator with the real SDK (a checkout is paid on the emulator's hosted page), and the
 * matching Tollgate rows are written through the ORM into the test database, as the checkout
 * notification would write them.
 */
export class BillingFixtures {
  readonly stripe: Stripe;

  constructor(
    private readonly core: Core,
    readonly appId: string,
  ) {
    const emulator = core.payments.emulator;
    if (!emulator) throw new Error('Tollgate runs without its Stripe emulator');
    const url = new URL(emulator.url);
    this.stripe = new Stripe('sk_test_billing_fixtures', {
      host: url.hostname,
      port: Number(url.port),
      protocol: 'http',
      maxNetworkRetries: 0,
    });
  }

  private get emulatorUrl(): string {
    return this.core.payments.emulator!.url;
  }

  private run<T>(fn: () => Promise<T>): Promise<T> {
    return withContext(this.core.deps.orm, fn);
  }

  /** A plan of the app sold at a new Stripe price; returns the plan's slug (its public id) and the price. */
  async plan(
    options: {
      slug?: string;
      unitAmount?: number;
      currency?: string;
      trialDays?: number;
      features?: Plan['features'];
      productName?: string;
    } = {},
  ): Promise<{ slug: string; planId: string; price: Stripe.Price }> {
    const slug = options.slug ?? `plan-${randomBytes(3).toString('hex')}`;
    const price = await this.stripe.prices.create({
      currency: options.currency ?? 'usd',
      unit_amount: options.unitAmount ?? 2000,
      recurring: { interval: 'month' },
      product_data: { name: options.productName ?? slug },
    });
    const planId = await this.run(async () => {
      const em = this.core.deps.orm.em;
      const plan = em.create(Plan, {
        id: newId('pln'),
        app: this.appId,
        slug,
        name: slug.toUpperCase(),
        stripePriceId: price.id,
        trialDays: options.trialDays ?? 0,
        features: options.features ?? { seats: 5 },
      });
      await em.flush();
      return plan.id;
    });
    return { slug, planId, price };
  }

  /** A customer of the app, linked to a new Stripe customer unless `linked: false`. */
  async customer(
    options: { linked?: boolean } = {},
  ): Promise<{ id: string; stripeCustomerId: string | null }> {
    const email = `billing-${randomBytes(5).toString('hex')}@example.com`;
    const stripeCustomerId =
      options.linked === false ? null : (await this.stripe.customers.create({ email })).id;
    const id = await this.run(async () => {
      const em = this.core.deps.orm.em;
      const customer = em.create(Customer, {
        id: newId('cus'),
        app: this.appId,
        email,
        emailLower: email,
        paymentCustomerId: stripeCustomerId,
      });
      await em.flush();
      return customer.id;
    });
    return { id, stripeCustomerId };
  }

  /** An organization of the app with the given members and roles. */
  async organization(members: Array<{ customerId: string; role: OrgRole }>): Promise<string> {
    return this.run(async () => {
      const em = this.core.deps.orm.em;
      const organization = em.create(Organization, { id: newId('org'), app: this.appId, name: 'Acme' });
      for (const member of members) {
        em.create(OrganizationMember, {
          id: newId('mem'),
          organization,
          customer: member.customerId,
          role: member.role,
        });
      }
      await em.flush();
      return organization.id;
    });
  }

  /** A session token of the customer (in the organization's context when given). */
  async session(customerId: string, organizationId?: string): Promise<string> {
    const { token } = await this.run(() =>
      this.core.services.sessions.issue({ appId: this.appId, customerId, organizationId }),
    );
    return token;
  }

  /**
   * Pays a checkout for `plan` on the emulator's hosted page (so Stripe has a real subscription and its
   * first invoice) and stores the subscription row for the customer or organization.
   */
  async subscription(
    owner: { customerId: string; stripeCustomerId: string; organizationId?: string },
    plan: { planId: string; price: Stripe.Price },
    options: { trialDays?: number; promotionCodeId?: string; createdAt?: Date } = {},
  ): Promise<{ id: string; stripeSubscriptionId: string }> {
    const checkout = await this.stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: owner.stripeCustomerId,
      line_items: [{ price: plan.price.id, quantity: 1 }],
      success_url: 'http://localhost:3000/done?session={CHECKOUT_SESSION_ID}',
      cancel_url: 'http://localhost:3000/cancel',
      ...(options.trialDays ? { subscription_data: { trial_period_days: options.trialDays } } : {}),
      ...(options.promotionCodeId ? { discounts: [{ promotion_code: options.promotionCodeId }] } : {}),
    });
    const paid = await fetch(`${this.emulatorUrl}/checkout/${checkout.id}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ card_number: '4242424242424242' }),
      redirect: 'manual',
    });
    if (paid.status !== 303) throw new Error(`checkout payment failed with ${paid.status}`);
    const completed = await this.stripe.checkout.sessions.retrieve(checkout.id);
    const remote = await this.stripe.subscriptions.retrieve(String(completed.subscription));
    // The emulator's notifications reach Tollgate too, and one about a subscription of a linked customer
    // imports it: whichever comes first writes the row, the other completes it (one row per subscription).
    const fields = {
      customer: owner.organizationId ? null : owner.customerId,
      organization: owner.organizationId ?? null,
      plan: plan.planId,
      status: remote.status as Subscription['status'],
      currentPeriodEnd: new Date(remote.items.data[0]!.current_period_end * 1000),
      trialEnd: remote.trial_end ? new Date(remote.trial_end * 1000) : null,
      ...(options.createdAt ? { createdAt: options.createdAt } : {}),
    };
    const id = await this.run(async () => {
      const em = this.core.deps.orm.em;
      await em
        .createQueryBuilder(Subscription)
        .insert({
          id: newId('sub'),
          app: this.appId,
          stripeSubscriptionId: remote.id,
          stripeCustomerId: owner.stripeCustomerId,
          ...fields,
        })
        .onConflict(['stripeSubscriptionId'])
        .ignore()
        .execute('run');
      await em.nativeUpdate(Subscription, { stripeSubscriptionId: remote.id }, fields);
      const row = await em.findOneOrFail(Subscription, { stripeSubscriptionId: remote.id });
      return row.id;
    });
    return { id, stripeSubscriptionId: remote.id };
  }

  /** The stored row, read fresh. */
  async stored(id: string): Promise<Subscription> {
    return this.run(() => this.core.deps.orm.em.findOneOrFail(Subscription, id, { populate: ['plan'] }));
  }
}
