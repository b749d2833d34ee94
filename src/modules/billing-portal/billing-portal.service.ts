import type { MikroORM } from '@mikro-orm/postgresql';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../core/errors.js';
import { type AppPrincipal, type Principal, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { assertOrganizationsEnabled } from '../apps/app-rules.js';
import { isAllowedCallbackUrl, parseStoredCallbackPatterns } from '../apps/callback-url.js';
import { Customer } from '../customers/customer.entity.js';
import { Organization, OrganizationMember } from '../organizations/organization.entity.js';
import type { PaymentProvider } from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';
import { apiKeyPortalSessionSchema, sessionPortalSessionSchema } from './billing-portal.schemas.js';

/**
 * Stripe's customer portal for a customer's or organization's own billing: invoices, the card, cancelling
 * and switching among the app's priced plans. Tollgate keeps one portal configuration per app at Stripe
 * offering exactly the app's plan prices; what the customer does there reaches Tollgate as the usual
 * notifications.
 */
export class BillingPortalService {
  /** Price → product: a price never moves to another product, so what was read once stays true. */
  readonly #productOfPrice = new Map<string, string>();

  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
  ) {}

  /**
   * `POST /v1/billing-portal/session`: a short-lived portal link. An API key names exactly one customer
   * or organization of its app; a customer session opens its own context (an organization's only as its
   * owner or admin), and its `returnUrl` must match the app's allowed callback URL patterns.
   */
  async createPortalSession(principal: Principal, input: unknown): Promise<{ url: string }> {
    const caller = requireAppPrincipal(principal);
    const em = this.orm.em;
    const app = await em.findOneOrFail(App, { id: caller.appId });
    let returnUrl: string;
    let stripeCustomerId: string | null;
    if (caller.kind === 'session') {
      ({ returnUrl } = parseInput(sessionPortalSessionSchema, input ?? {}));
      if (!isAllowedCallbackUrl(returnUrl, parseStoredCallbackPatterns(app.allowedCallbackUrls))) {
        throw ValidationError.forField(
          'returnUrl',
          "must match one of the app's allowed callback URL patterns",
        );
      }
      stripeCustomerId =
        caller.organizationId !== undefined
          ? await this.#organizationCustomer(caller, app, caller.organizationId)
          : await this.#customerCustomer(caller.appId, caller.customerId);
    } else {
      const body = parseInput(apiKeyPortalSessionSchema, input ?? {});
      returnUrl = body.returnUrl;
      stripeCustomerId =
        body.customerId !== undefined
          ? await this.#customerCustomer(caller.appId, body.customerId)
          : await this.#organizationCustomer(caller, app, body.organizationId!);
    }
    if (!stripeCustomerId) {
      throw new ConflictError('There is no billing account yet: start a checkout first');
    }
    const configurationId = await this.payments.ensurePortalConfiguration({
      appId: app.id,
      products: await this.#offeredProducts(app.id),
    });
    return this.payments.createPortalSession({ customerId: stripeCustomerId, returnUrl, configurationId });
  }

  async #customerCustomer(appId: string, customerId: string): Promise<string | null> {
    const customer = await this.orm.em.findOne(Customer, { id: customerId, app: appId });
    if (!customer) throw new NotFoundError('Customer', customerId);
    return customer.paymentCustomerId;
  }

  async #organizationCustomer(
    caller: AppPrincipal,
    app: App,
    organizationId: string,
  ): Promise<string | null> {
    assertOrganizationsEnabled(app);
    const em = this.orm.em;
    const organization = await em.findOne(Organization, { id: organizationId, app: app.id });
    if (!organization) throw new NotFoundError('Organization', organizationId);
    if (caller.kind === 'session') {
      // The current membership decides, not the role remembered in the session.
      const membership = await em.findOne(OrganizationMember, {
        organization: organization.id,
        customer: caller.customerId,
      });
      if (!membership) throw new NotFoundError('Organization', organizationId);
      if (membership.role === 'member') {
        throw new ForbiddenError(
          "Only an owner or admin of the organization can manage the organization's billing",
        );
      }
    }
    return organization.paymentCustomerId;
  }

  /** The app's plan prices grouped by Stripe product, as a portal configuration lists them. */
  async #offeredProducts(appId: string): Promise<Array<{ product: string; prices: string[] }>> {
    const plans = await this.orm.em.find(
      Plan,
      { app: appId, stripePriceId: { $ne: null } },
      { orderBy: { createdAt: 'asc' } },
    );
    const byProduct = new Map<string, string[]>();
    const prices = [...new Set(plans.map((plan) => plan.stripePriceId!))];
    const products = await Promise.all(prices.map((price) => this.#productOf(price)));
    prices.forEach((price, i) => {
      const product = products[i];
      if (!product) return;
      byProduct.set(product, [...(byProduct.get(product) ?? []), price]);
    });
    return [...byProduct].map(([product, list]) => ({ product, prices: list }));
  }

  async #productOf(priceId: string): Promise<string | null> {
    const known = this.#productOfPrice.get(priceId);
    if (known) return known;
    const price = await this.payments.retrievePrice(priceId);
    // A price gone at Stripe, or an inactive one, cannot be offered.
    if (!price?.active || !price.recurring) return null;
    this.#productOfPrice.set(priceId, price.product);
    return price.product;
  }
}
