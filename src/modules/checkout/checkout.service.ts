import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ProviderError,
  ValidationError,
} from '../../core/errors.js';
import { type AppPrincipal, type Principal, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { assertOrganizationsEnabled } from '../apps/app-rules.js';
import { isAllowedCallbackUrl, parseStoredCallbackPatterns } from '../apps/callback-url.js';
import { couponProblem } from '../coupons/coupon-rules.js';
import { Customer } from '../customers/customer.entity.js';
import { presentCustomer } from '../customers/customer.presenter.js';
import { assertMetadataLimits } from '../customers/customers.schemas.js';
import { Organization, OrganizationMember } from '../organizations/organization.entity.js';
import type { PaymentProvider } from '../payments/payment-provider.js';
import { overagePrices } from '../plans/metered-feature.js';
import { Plan } from '../plans/plan.entity.js';
import { Subscription } from '../subscriptions/subscription.entity.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { type CheckoutInput, checkoutSchema } from './checkout.schemas.js';
import { type CheckoutBuyer, encodeCallerMetadata, trackingMetadata } from './checkout-metadata.js';
import { OpenCheckout } from './open-checkout.entity.js';

/** Who pays at Stripe: an existing Stripe customer, or an e-mail for a customer Stripe creates. */
type ProviderBuyer = { readonly id: string } | { readonly email: string };

/**
 * Statuses of a subscription its owner still holds: a second checkout would bill the owner twice, so
 * the plan is changed instead (`paused` is a trial that ended without a card and can be resumed).
 */
const LIVE_STATUSES = ['trialing', 'active', 'past_due', 'paused'] as const;

/**
 * Hosted checkout: the only way Tollgate's subscriptions start. The session carries Tollgate's tracking
 * metadata so the completed-checkout notification can create the subscription; nothing is stored here.
 */
export class CheckoutService {
  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
    private readonly clock: Clock,
    private readonly events: OutboundEvents,
  ) {}

  /**
   * `POST /v1/checkout/session`: a Stripe checkout for one plan, for exactly one of an existing customer,
   * a new customer by e-mail, or an organization. An API key may check out anyone of its app; a customer
   * session only itself, or an organization it owns or administers. Unless the app allows several
   * subscriptions, a buyer that already holds a live subscription gets 409 (change its plan instead).
   */
  async createCheckoutSession(principal: Principal, input: unknown): Promise<{ url: string }> {
    const caller = requireAppPrincipal(principal);
    const body = parseInput(checkoutSchema, input);
    if (body.metadata) assertMetadataLimits(body.metadata);
    const em = this.orm.em;
    const app = await em.findOneOrFail(App, { id: caller.appId });
    if (caller.kind === 'session') assertAllowedRedirects(app, body);

    const plan = await em.findOne(Plan, { app: app.id, slug: body.planId });
    if (!plan) throw ValidationError.forField('planId', `the app has no plan "${body.planId}"`);
    if (plan.archived) {
      throw ValidationError.forField('planId', `plan "${plan.slug}" is archived: it takes no new checkouts`);
    }
    if (!plan.stripePriceId) {
      throw ValidationError.forField(
        'planId',
        `plan "${plan.slug}" has no Stripe price, so it needs no checkout`,
      );
    }

    const { tracked, provider } = await this.#buyer(caller, app, body);
    const promotionCodeId = body.couponCode
      ? await this.#promotionCodeId(body.couponCode, plan.stripePriceId)
      : null;
    const tracking = trackingMetadata({ appId: app.id, planId: plan.slug, buyer: tracked });
    const session = await this.payments.createCheckoutSession({
      priceId: plan.stripePriceId,
      quantity: await this.#quantity(plan, tracked),
      // Overage is billed per unit through the plan's metered prices, items of their own.
      meteredPriceIds: [...new Set(overagePrices(plan.features).values())],
      customer: provider,
      successUrl: body.successUrl,
      cancelUrl: body.cancelUrl,
      trialDays: plan.trialDays,
      collectPaymentMethodDuringTrial: app.trialPaymentMethod === 'require_payment_method',
      requireBillingAddress: body.collectBillingAddress === true,
      promotionCodeId,
      metadata: tracking,
      subscriptionMetadata: { ...tracking, ...encodeCallerMetadata(body.metadata ?? {}) },
    });
    await this.#recordOpen(app, tracked, session);
    return { url: session.url };
  }

  /**
   * An organization on a per-seat plan buys a seat for each member (at least the plan's `min`); later
   * membership changes move the quantity (see SeatBilling). Anything else buys one.
   */
  async #quantity(plan: Plan, buyer: CheckoutBuyer): Promise<number> {
    if (plan.seats?.mode !== 'per_seat' || !('organizationId' in buyer)) return 1;
    const members = await this.orm.em.count(OrganizationMember, { organization: buyer.organizationId });
    return Math.max(plan.seats.min, members);
  }

  /** Remembers the session until it completes, so the buyer's other open sessions can then be expired. */
  async #recordOpen(app: App, buyer: CheckoutBuyer, session: { id: string; expiresAt: Date }): Promise<void> {
    const now = this.clock.now();
    await this.orm.em.transactional(async (em) => {
      // Sessions never paid are cleared away once the provider has expired them by itself.
      await em.nativeDelete(OpenCheckout, { app: app.id, expiresAt: { $lt: now } });
      await em.insert(OpenCheckout, {
        id: session.id,
        app: app.id,
        customer: 'customerId' in buyer ? buyer.customerId : null,
        organization: 'organizationId' in buyer ? buyer.organizationId : null,
        emailLower: 'email' in buyer ? buyer.email.toLowerCase() : null,
        expiresAt: session.expiresAt,
        createdAt: now,
      });
    });
  }

  /** 409 naming the plan-change endpoint when the owner already holds a live subscription of the app. */
  async #assertNoLiveSubscription(
    app: App,
    owner: { customer: string } | { organization: string },
    who: string,
  ): Promise<void> {
    if (app.allowMultipleSubscriptions) return;
    const live = await this.orm.em.findOne(
      Subscription,
      { app: app.id, ...owner, status: { $in: [...LIVE_STATUSES] } },
      { orderBy: { createdAt: 'desc' } },
    );
    if (!live) return;
    throw new ConflictError(
      `${who} already has subscription ${live.id}, which is ${live.status}: change its plan with ` +
        `POST /v1/subscriptions/:id/change-plan (id ${live.id}) instead of starting another checkout`,
    );
  }

  /** The buyer as tracked by Tollgate and as passed to Stripe, with the caller's right to buy for it. */
  async #buyer(
    caller: AppPrincipal,
    app: App,
    body: CheckoutInput,
  ): Promise<{ tracked: CheckoutBuyer; provider: ProviderBuyer }> {
    const em = this.orm.em;
    if (body.customerId !== undefined) {
      if (caller.kind === 'session' && caller.customerId !== body.customerId) {
        throw new ForbiddenError('A customer session can start a checkout only for its own customer');
      }
      const customer = await em.findOne(Customer, { id: body.customerId, app: app.id });
      if (!customer) throw new NotFoundError('Customer', body.customerId);
      await this.#assertNoLiveSubscription(app, { customer: customer.id }, `Customer ${customer.id}`);
      return {
        tracked: { customerId: customer.id },
        provider: { id: await this.#customerAtProvider(customer) },
      };
    }
    if (body.email !== undefined) {
      if (caller.kind === 'session') {
        throw new ForbiddenError(
          'A customer session starts a checkout with its own customerId, not an e-mail',
        );
      }
      // An e-mail that already belongs to a customer of the app is that customer's checkout.
      const existing = await em.findOne(Customer, { app: app.id, emailLower: body.email.toLowerCase() });
      if (existing) {
        await this.#assertNoLiveSubscription(
          app,
          { customer: existing.id },
          `The customer with this e-mail (${existing.id})`,
        );
        return {
          tracked: { customerId: existing.id },
          provider: { id: await this.#customerAtProvider(existing) },
        };
      }
      return { tracked: { email: body.email }, provider: { email: body.email } };
    }
    const organizationId = body.organizationId!;
    assertOrganizationsEnabled(app);
    const organization = await em.findOne(Organization, { id: organizationId, app: app.id });
    if (!organization) throw new NotFoundError('Organization', organizationId);
    let email: string | null = null;
    if (caller.kind === 'session') {
      const membership = await em.findOne(
        OrganizationMember,
        { organization: organization.id, customer: caller.customerId },
        { populate: ['customer'] },
      );
      if (!membership) throw new NotFoundError('Organization', organizationId);
      if (membership.role === 'member') {
        throw new ForbiddenError('Only an owner or admin of the organization can start its checkout');
      }
      email = membership.customer.email;
    }
    await this.#assertNoLiveSubscription(
      app,
      { organization: organization.id },
      `Organization ${organization.id}`,
    );
    return {
      tracked: { organizationId: organization.id },
      provider: { id: await this.#organizationAtProvider(organization, email) },
    };
  }

  /**
   * The customer's Stripe customer, created on first need. The idempotency key is the customer's id, so
   * concurrent checkouts make one Stripe customer; only an empty `paymentCustomerId` is filled.
   */
  async #customerAtProvider(customer: Customer): Promise<string> {
    if (customer.paymentCustomerId) return customer.paymentCustomerId;
    const created = await this.payments.createCustomer(
      {
        email: customer.email,
        name: customer.name,
        metadata: { tollgate_app_id: customer.app.id, tollgate_customer_id: customer.id },
      },
      `tollgate-customer-${customer.id}`,
    );
    const stored = await this.orm.em.transactional(async (em) => {
      const linked = await em.nativeUpdate(
        Customer,
        { id: customer.id, paymentCustomerId: null },
        { paymentCustomerId: created.id, updatedAt: this.clock.now() },
      );
      const current = await em.findOneOrFail(Customer, { id: customer.id }, { refresh: true });
      if (linked === 1)
        await this.events.record(em, customer.app.id, 'customer.updated', presentCustomer(current), [
          current.id,
        ]);
      return current;
    });
    return stored.paymentCustomerId ?? created.id;
  }

  /** The organization's own Stripe customer (`organization.paymentCustomerId`), created on first need. */
  async #organizationAtProvider(organization: Organization, email: string | null): Promise<string> {
    if (organization.paymentCustomerId) return organization.paymentCustomerId;
    const created = await this.payments.createCustomer(
      {
        email,
        name: organization.name,
        metadata: { tollgate_app_id: organization.app.id, tollgate_organization_id: organization.id },
      },
      `tollgate-organization-${organization.id}`,
    );
    await this.orm.em.nativeUpdate(
      Organization,
      { id: organization.id, paymentCustomerId: null },
      { paymentCustomerId: created.id, updatedAt: this.clock.now() },
    );
    const stored = await this.orm.em.findOneOrFail(Organization, { id: organization.id }, { refresh: true });
    return stored.paymentCustomerId ?? created.id;
  }

  /** The promotion code's id when it may discount the plan's price now, else 400 with the reason. */
  async #promotionCodeId(code: string, priceId: string): Promise<string> {
    const [promotionCode, price] = await Promise.all([
      this.payments.findPromotionCode(code),
      this.payments.retrievePrice(priceId),
    ]);
    if (!price)
      throw new ProviderError(`The plan's Stripe price ${priceId} does not exist at the payment provider`);
    const problem = couponProblem(promotionCode, price, Math.floor(this.clock.now().getTime() / 1000));
    if (problem || !promotionCode) {
      throw ValidationError.forField('couponCode', problem ?? 'Coupon code not found');
    }
    return promotionCode.id;
  }
}

/**
 * A customer session runs in the customer's browser, so where Stripe sends the customer afterwards must
 * be an address the app allows (its callback URL patterns, or localhost), as for magic links.
 */
function assertAllowedRedirects(app: App, body: CheckoutInput): void {
  const patterns = parseStoredCallbackPatterns(app.allowedCallbackUrls);
  for (const field of ['successUrl', 'cancelUrl'] as const) {
    if (!isAllowedCallbackUrl(body[field], patterns)) {
      throw ValidationError.forField(field, "must match one of the app's allowed callback URL patterns");
    }
  }
}
