import { createHash } from 'node:crypto';
import Stripe from 'stripe';
import { DomainError, ProviderError, ProviderUnavailableError, ValidationError } from '../../core/errors.js';
import {
  type CheckoutSessionRequest,
  type MeterEventReport,
  type PaymentProvider,
  type PortalConfigurationRequest,
  type PriceChange,
  type ProrationBehavior,
  type ProviderCheckoutSession,
  type ProviderCoupon,
  type ProviderEvent,
  type ProviderMeter,
  type ProviderPrice,
  type ProviderPromotionCode,
  type ProviderSubscription,
  type ProviderSubscriptionDiscount,
  SUBSCRIPTION_STATUSES,
} from './payment-provider.js';
import {
  MalformedNotification,
  parseStripeNotification,
  type StripeCheckoutSessionFields,
  type StripeNotification,
  type StripeSubscriptionFields,
} from './stripe-event.schemas.js';

export interface StripeProviderOptions {
  readonly secretKey: string;
  readonly webhookSecret: string;
  /** Another Stripe-compatible base (the emulator), e.g. `http://127.0.0.1:12111`; Stripe's own when unset. */
  readonly apiBase?: string;
}

const toDate = (seconds: number | null | undefined): Date | null =>
  seconds === null || seconds === undefined ? null : new Date(seconds * 1000);

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  value === null || value === undefined ? null : typeof value === 'string' ? value : value.id;

/** The one adapter of the PaymentProvider port: the official SDK, unmodified, against Stripe or the emulator. */
export class StripePaymentProvider implements PaymentProvider {
  readonly #stripe: Stripe;
  readonly #webhookSecret: string;

  constructor(options: StripeProviderOptions) {
    const base = options.apiBase ? new URL(options.apiBase) : undefined;
    this.#stripe = new Stripe(options.secretKey, {
      ...(base
        ? {
            host: base.hostname,
            port: base.port || (base.protocol === 'https:' ? 443 : 80),
            protocol: base.protocol === 'https:' ? 'https' : 'http',
          }
        : {}),
      // The SDK retries network failures and 409/5xx with an idempotency key, so retries never duplicate.
      maxNetworkRetries: 2,
      timeout: 20_000,
      appInfo: { name: 'Tollgate' },
    });
    this.#webhookSecret = options.webhookSecret;
  }

  async createCustomer(
    input: { email: string | null; name: string | null; metadata: Readonly<Record<string, string>> },
    idempotencyKey: string,
  ) {
    const customer = await call(() =>
      this.#stripe.customers.create(
        {
          ...(input.email ? { email: input.email } : {}),
          ...(input.name ? { name: input.name } : {}),
          metadata: { ...input.metadata },
        },
        { idempotencyKey },
      ),
    );
    return { id: customer.id };
  }

  async retrieveCustomer(id: string) {
    const customer = await orNull(() => this.#stripe.customers.retrieve(id));
    if (!customer || customer.deleted) return null;
    return { id: customer.id, email: customer.email ?? null, name: customer.name ?? null };
  }

  async retrievePrice(id: string): Promise<ProviderPrice | null> {
    const price = await orNull(() => this.#stripe.prices.retrieve(id));
    return price ? fromStripePrice(price) : null;
  }

  async retrieveMeter(id: string): Promise<ProviderMeter | null> {
    const meter = await orNull(() => this.#stripe.billing.meters.retrieve(id));
    return meter ? { id: meter.id, eventName: meter.event_name, active: meter.status === 'active' } : null;
  }

  async reportMeterEvent(event: MeterEventReport): Promise<void> {
    await call(() =>
      this.#stripe.billing.meterEvents.create({
        event_name: event.eventName,
        identifier: event.identifier,
        timestamp: Math.floor(event.timestamp.getTime() / 1000),
        payload: { stripe_customer_id: event.customerId, value: String(event.value) },
      }),
    );
  }

  async cancelMeterEvent(input: { eventName: string; identifier: string }): Promise<void> {
    await call(() =>
      this.#stripe.billing.meterEventAdjustments.create({
        event_name: input.eventName,
        type: 'cancel',
        cancel: { identifier: input.identifier },
      }),
    );
  }

  async createRecurringPrice(input: {
    productName: string;
    unitAmount: number;
    currency: string;
    interval: 'day' | 'week' | 'month' | 'year';
  }): Promise<ProviderPrice> {
    const product = await call(() => this.#stripe.products.create({ name: input.productName }));
    const price = await call(() =>
      this.#stripe.prices.create({
        product: product.id,
        unit_amount: input.unitAmount,
        currency: input.currency,
        recurring: { interval: input.interval },
      }),
    );
    return fromStripePrice(price);
  }

  async findPromotionCode(code: string): Promise<ProviderPromotionCode | null> {
    const page = await call(() =>
      this.#stripe.promotionCodes.list({ code, limit: 10, expand: ['data.promotion.coupon'] }),
    );
    // Several codes may share a text over time; an active one wins, else the newest says why it fails.
    const match = page.data.find((p) => p.active) ?? page.data[0];
    if (!match) return null;
    const coupon =
      typeof match.promotion.coupon === 'string' || match.promotion.coupon === null
        ? await call(() => this.#stripe.coupons.retrieve(String(match.promotion.coupon)))
        : match.promotion.coupon;
    return {
      id: match.id,
      code: match.code,
      active: match.active,
      expiresAt: match.expires_at,
      maxRedemptions: match.max_redemptions,
      timesRedeemed: match.times_redeemed,
      minimumAmount: match.restrictions.minimum_amount,
      minimumAmountCurrency: match.restrictions.minimum_amount_currency,
      coupon: fromStripeCoupon(coupon),
    };
  }

  async createCheckoutSession(
    input: CheckoutSessionRequest,
  ): Promise<{ id: string; url: string; expiresAt: Date }> {
    const params: Stripe.Checkout.SessionCreateParams = {
      mode: 'subscription',
      line_items: [
        { price: input.priceId, quantity: input.quantity ?? 1 },
        ...input.meteredPriceIds.map((price) => ({ price })),
      ],
      success_url: input.successUrl,
      cancel_url: input.cancelUrl,
      metadata: { ...input.metadata },
      subscription_data: {
        metadata: { ...input.subscriptionMetadata },
        ...(input.trialDays > 0
          ? {
              trial_period_days: input.trialDays,
              // A trial started without a card ends canceled, not with an unpayable invoice.
              ...(input.collectPaymentMethodDuringTrial
                ? {}
                : { trial_settings: { end_behavior: { missing_payment_method: 'cancel' as const } } }),
            }
          : {}),
      },
      payment_method_collection:
        input.trialDays > 0 && !input.collectPaymentMethodDuringTrial ? 'if_required' : 'always',
      billing_address_collection: input.requireBillingAddress ? 'required' : 'auto',
      ...('id' in input.customer
        ? { customer: input.customer.id }
        : { customer_email: input.customer.email }),
      ...(input.promotionCodeId ? { discounts: [{ promotion_code: input.promotionCodeId }] } : {}),
    };
    const session = await call(() => this.#stripe.checkout.sessions.create(params));
    if (!session.url)
      throw new ProviderError('The payment provider returned a checkout session without a URL');
    return { id: session.id, url: session.url, expiresAt: new Date(session.expires_at * 1000) };
  }

  async expireCheckoutSession(id: string): Promise<void> {
    try {
      await this.#stripe.checkout.sessions.expire(id);
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeInvalidRequestError)) throw translate(error);
      // Refused because it is no longer open (or does not exist): nothing is left to expire.
      const session = await orNull(() => this.#stripe.checkout.sessions.retrieve(id));
      if (session && session.status === 'open') throw translate(error);
    }
  }

  async retrieveSubscription(id: string): Promise<ProviderSubscription | null> {
    const subscription = await orNull(() =>
      this.#stripe.subscriptions.retrieve(id, { expand: [...WITH_COUPONS] }),
    );
    return subscription ? fromStripeSubscription(subscription) : null;
  }

  async updateSubscription(
    id: string,
    change: { cancelAtPeriodEnd?: boolean; pauseCollection?: boolean },
    idempotencyKey: string,
  ): Promise<ProviderSubscription> {
    const params: Stripe.SubscriptionUpdateParams = { expand: [...WITH_COUPONS] };
    if (change.cancelAtPeriodEnd !== undefined) params.cancel_at_period_end = change.cancelAtPeriodEnd;
    if (change.pauseCollection !== undefined) {
      params.pause_collection = change.pauseCollection ? { behavior: 'void' } : '';
    }
    return fromStripeSubscription(
      await call(() => this.#stripe.subscriptions.update(id, params, { idempotencyKey })),
    );
  }

  async cancelSubscription(id: string, idempotencyKey: string): Promise<ProviderSubscription> {
    return fromStripeSubscription(
      await call(() =>
        this.#stripe.subscriptions.cancel(id, { expand: [...WITH_COUPONS] }, { idempotencyKey }),
      ),
    );
  }

  async changeSubscriptionPrice(
    id: string,
    change: PriceChange,
    idempotencyKey: string,
  ): Promise<ProviderSubscription> {
    const items = await this.#itemChanges(id, change);
    return fromStripeSubscription(
      await call(() =>
        this.#stripe.subscriptions.update(
          id,
          {
            items,
            proration_behavior: change.prorationBehavior,
            expand: [...WITH_COUPONS],
          },
          { idempotencyKey },
        ),
      ),
    );
  }

  async setSubscriptionItemQuantity(
    id: string,
    change: { priceId: string; quantity: number; prorationBehavior: ProrationBehavior },
    idempotencyKey: string,
  ): Promise<ProviderSubscription> {
    const { item } = await this.#planItem(id, change.priceId);
    return fromStripeSubscription(
      await call(() =>
        this.#stripe.subscriptions.update(
          id,
          {
            items: [{ id: item.id, quantity: change.quantity }],
            proration_behavior: change.prorationBehavior,
          },
          { idempotencyKey },
        ),
      ),
    );
  }

  async previewPriceChange(id: string, change: PriceChange): Promise<{ amount: number; currency: string }> {
    const items = await this.#itemChanges(id, change);
    const preview = await call(() =>
      this.#stripe.invoices.createPreview({
        subscription: id,
        subscription_details: {
          items,
          proration_behavior: change.prorationBehavior,
        },
      }),
    );
    const amount = preview.lines.data
      .filter((line) => line.parent?.subscription_item_details?.proration === true)
      .reduce((sum, line) => sum + line.amount, 0);
    return { amount, currency: preview.currency };
  }

  /**
   * The subscription's items and its item at `priceId` (the plan's item), which a price or quantity change
   * names; other items (metered usage, add-ons) are never taken for it. A subscription of a single item
   * whose price moved at Stripe since Tollgate last heard still has its one item changed.
   */
  async #planItem(
    subscriptionId: string,
    priceId: string,
  ): Promise<{ item: Stripe.SubscriptionItem; items: Stripe.SubscriptionItem[] }> {
    const subscription = await call(() => this.#stripe.subscriptions.retrieve(subscriptionId));
    const items = subscription.items.data;
    const item = items.find((i) => i.price.id === priceId) ?? (items.length === 1 ? items[0] : undefined);
    if (!item) {
      throw new ProviderError(
        `Stripe subscription ${subscriptionId} has no item at price ${priceId} to change`,
      );
    }
    return { item, items };
  }

  /**
   * The item changes of a price change: the plan's item moves to the new price; the old plan's metered
   * (overage) items the new plan lacks go, and the new plan's are added.
   */
  async #itemChanges(
    subscriptionId: string,
    change: PriceChange,
  ): Promise<Stripe.SubscriptionUpdateParams.Item[]> {
    const { item, items } = await this.#planItem(subscriptionId, change.fromPriceId);
    const changes: Stripe.SubscriptionUpdateParams.Item[] = [{ id: item.id, price: change.priceId }];
    const metered = change.meteredPriceIds ?? { from: [], to: [] };
    for (const other of items) {
      if (other.id === item.id) continue;
      if (metered.from.includes(other.price.id) && !metered.to.includes(other.price.id))
        changes.push({ id: other.id, deleted: true });
    }
    for (const price of new Set(metered.to)) {
      if (!items.some((i) => i.price.id === price)) changes.push({ price });
    }
    return changes;
  }

  async listSubscriptions(customerId: string): Promise<ProviderSubscription[]> {
    const all = await call(() =>
      this.#stripe.subscriptions
        .list({
          customer: customerId,
          status: 'all',
          limit: 100,
          expand: WITH_COUPONS.map((path) => `data.${path}`),
        })
        .autoPagingToArray({ limit: MAX_LISTED }),
    );
    return all.map(fromStripeSubscription);
  }

  async ensurePortalConfiguration(request: PortalConfigurationRequest): Promise<string> {
    const features: Stripe.BillingPortal.ConfigurationCreateParams.Features = {
      invoice_history: { enabled: true },
      payment_method_update: { enabled: true },
      subscription_cancel: { enabled: true, mode: 'at_period_end' },
      subscription_update: {
        enabled: request.products.length > 0,
        default_allowed_updates: request.products.length > 0 ? ['price'] : [],
        products: request.products.map((p) => ({ product: p.product, prices: [...p.prices] })),
        proration_behavior: 'create_prorations',
      },
    };
    const wanted = JSON.stringify(request.products.map((p) => [p.product, [...p.prices].sort()]).sort());
    const configurations = await call(() =>
      this.#stripe.billingPortal.configurations
        .list({ active: true, limit: 100 })
        .autoPagingToArray({ limit: MAX_LISTED }),
    );
    const existing = configurations.find((c) => c.metadata?.[PORTAL_APP_KEY] === request.appId);
    if (!existing) {
      const created = await call(() =>
        this.#stripe.billingPortal.configurations.create(
          { features, metadata: { [PORTAL_APP_KEY]: request.appId } },
          // The same offer for the same app makes one configuration, however many sessions race.
          { idempotencyKey: `tollgate-portal-${request.appId}-${hash(wanted)}` },
        ),
      );
      return created.id;
    }
    const offered = existing.features.subscription_update;
    const current = JSON.stringify(
      (offered.enabled ? (offered.products ?? []) : []).map((p) => [p.product, [...p.prices].sort()]).sort(),
    );
    if (current !== wanted) {
      await call(() => this.#stripe.billingPortal.configurations.update(existing.id, { features }));
    }
    return existing.id;
  }

  async createPortalSession(input: { customerId: string; returnUrl: string; configurationId: string }) {
    const session = await call(() =>
      this.#stripe.billingPortal.sessions.create({
        customer: input.customerId,
        return_url: input.returnUrl,
        configuration: input.configurationId,
      }),
    );
    return { url: session.url };
  }

  async listInvoices(customerId: string, limit: number) {
    const page = await call(() => this.#stripe.invoices.list({ customer: customerId, limit }));
    return page.data.map((invoice) => ({
      id: invoice.id ?? '',
      created: new Date(invoice.created * 1000),
      amountPaid: invoice.amount_paid,
      currency: invoice.currency,
      status: invoice.status ?? null,
      hostedInvoiceUrl: invoice.hosted_invoice_url ?? null,
    }));
  }

  verifyEvent(rawBody: Buffer, signature: string | undefined): ProviderEvent {
    if (!signature) throw new ValidationError('Missing Stripe-Signature header');
    let json: unknown;
    try {
      json = this.#stripe.webhooks.constructEvent(
        rawBody,
        signature,
        this.#webhookSecret,
        SIGNATURE_TOLERANCE_S,
      );
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
        throw new ValidationError('Invalid Stripe-Signature: the notification could not be verified');
      }
      throw new ValidationError('Malformed notification body');
    }
    // The SDK refuses only signatures older than the tolerance. One dated later than that is no fresher:
    // it was made with a wrong clock or ahead of time to be replayed later, so it is refused the same way.
    if (signedAt(signature) > Date.now() / 1000 + SIGNATURE_TOLERANCE_S) {
      throw new ValidationError('Invalid Stripe-Signature: its timestamp lies in the future');
    }
    let event: StripeNotification;
    try {
      event = parseStripeNotification(json);
    } catch (error) {
      if (!(error instanceof MalformedNotification)) throw error;
      const which = error.eventId ? `Stripe event ${error.eventId} (${error.eventType})` : 'Stripe event';
      throw new ValidationError(`${which} cannot be applied: ${error.message}`, {
        eventId: error.eventId,
        eventType: error.eventType,
        problems: error.problems,
      });
    }
    const base = { id: event.id, type: event.type, created: event.created };
    switch (event.kind) {
      case 'checkout_completed':
        return { ...base, kind: 'checkout_completed', session: fromStripeCheckoutSession(event.object) };
      case 'subscription':
        return { ...base, kind: 'subscription', subscription: fromStripeSubscription(event.object) };
      case 'invoice':
        return {
          ...base,
          kind: 'invoice',
          subscriptionId: idOf(event.object.parent?.subscription_details?.subscription),
        };
      case 'ignored':
        return { ...base, kind: 'ignored' };
    }
  }
}

/** A bound on what one list call gathers across pages (Stripe's own cap for `autoPagingToArray`). */
const MAX_LISTED = 10_000;

const INTERVALS = ['day', 'week', 'month', 'year'] as const;

/** A subscription's discounts with their coupons' terms, which its MRR needs (notifications carry ids only). */
const WITH_COUPONS = ['discounts.source.coupon'] as const;

/** The metadata key marking the portal configuration Tollgate keeps for an app. */
const PORTAL_APP_KEY = 'tollgate_app_id';

const hash = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** Stripe's own default: how far a signature's timestamp may lie from now, either way. */
const SIGNATURE_TOLERANCE_S = 300;

/** The `t=` of a Stripe-Signature header, read as the SDK reads it (the last one counts). */
function signedAt(header: string): number {
  let timestamp = Number.NaN;
  for (const part of header.split(',')) {
    const [key, value] = part.split('=');
    if (key === 't') timestamp = Number.parseInt(value ?? '', 10);
  }
  return timestamp;
}

function fromStripePrice(price: Stripe.Price): ProviderPrice {
  return {
    id: price.id,
    product: idOf(price.product) ?? '',
    active: price.active,
    recurring: price.recurring !== null,
    usageType: !price.recurring ? null : price.recurring.usage_type === 'metered' ? 'metered' : 'licensed',
    unitAmount: price.unit_amount,
    currency: price.currency,
    interval: price.recurring?.interval ?? null,
    intervalCount: price.recurring?.interval_count ?? null,
    meter: price.recurring?.meter ?? null,
  };
}

function fromStripeCoupon(coupon: Stripe.Coupon): ProviderCoupon {
  return {
    id: coupon.id,
    valid: coupon.valid,
    appliesToProducts: coupon.applies_to ? [...coupon.applies_to.products] : null,
    percentOff: coupon.percent_off,
    amountOff: coupon.amount_off,
    amountOffCurrency: coupon.amount_off === null ? null : coupon.currency,
    redeemBy: coupon.redeem_by,
    maxRedemptions: coupon.max_redemptions,
    timesRedeemed: coupon.times_redeemed,
  };
}

function fromStripeCheckoutSession(session: StripeCheckoutSessionFields): ProviderCheckoutSession {
  return {
    id: session.id,
    status: session.status === 'complete' ? 'complete' : session.status === 'expired' ? 'expired' : 'open',
    customerId: idOf(session.customer),
    customerEmail: session.customer_details?.email ?? session.customer_email ?? null,
    customerName: session.customer_details?.name ?? null,
    subscriptionId: idOf(session.subscription),
    metadata: { ...(session.metadata ?? {}) },
  };
}

function fromStripeSubscription(subscription: StripeSubscriptionFields): ProviderSubscription {
  // The items of a subscription share its period: any of them tells its end.
  const item = subscription.items.data[0];
  return {
    id: subscription.id,
    customerId: idOf(subscription.customer) ?? '',
    status: SUBSCRIPTION_STATUSES.find((known) => known === subscription.status) ?? 'incomplete',
    collectionPaused: subscription.pause_collection !== null && subscription.pause_collection !== undefined,
    priceIds: subscription.items.data.map((i) => i.price.id),
    items: subscription.items.data.map((i) => ({
      priceId: i.price.id,
      quantity: i.quantity ?? 1,
      unitAmount: i.price.unit_amount ?? null,
      currency: i.price.currency ?? '',
      interval: INTERVALS.find((known) => known === i.price.recurring?.interval) ?? 'month',
      intervalCount: i.price.recurring?.interval_count ?? 1,
      usageType: i.price.recurring?.usage_type === 'metered' ? 'metered' : 'licensed',
    })),
    discounts: (subscription.discounts ?? []).map(fromStripeDiscount),
    currentPeriodEnd: toDate(item?.current_period_end),
    cancelAtPeriodEnd: subscription.cancel_at_period_end,
    trialEnd: toDate(subscription.trial_end),
    canceledAt: toDate(subscription.canceled_at),
    metadata: { ...subscription.metadata },
  };
}

function fromStripeDiscount(
  discount: NonNullable<StripeSubscriptionFields['discounts']>[number],
): ProviderSubscriptionDiscount {
  if (typeof discount === 'string') return { id: discount, coupon: null };
  const coupon = discount.source?.coupon;
  return {
    id: discount.id,
    coupon:
      coupon && typeof coupon === 'object'
        ? {
            id: coupon.id,
            duration:
              coupon.duration === 'forever' || coupon.duration === 'repeating' ? coupon.duration : 'once',
            percentOff: coupon.percent_off ?? null,
            amountOff: coupon.amount_off ?? null,
            currency: coupon.amount_off ? (coupon.currency ?? null) : null,
          }
        : null,
  };
}

/** Stripe failures in Tollgate's words: unreachable or overloaded → 503, refused → 502. */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw translate(error);
  }
}

/** A retrieve whose object does not exist answers null rather than failing. */
async function orNull<T>(fn: () => Promise<T>): Promise<T | null> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing')
      return null;
    throw translate(error);
  }
}

/** Anything that is not a Stripe error is a bug of ours: passed on unchanged, so it is logged as a 500. */
function translate(error: unknown): unknown {
  if (error instanceof DomainError || !(error instanceof Stripe.errors.StripeError)) return error;
  if (
    error instanceof Stripe.errors.StripeConnectionError ||
    error instanceof Stripe.errors.StripeRateLimitError ||
    error instanceof Stripe.errors.StripeAPIError
  ) {
    return new ProviderUnavailableError();
  }
  if (error instanceof Stripe.errors.StripeAuthenticationError) {
    return new ProviderError('The payment provider refused the configured secret key');
  }
  return new ProviderError(`The payment provider rejected the request: ${error.message}`);
}
