/**
 * The payment provider as the core sees it: a small port in Tollgate's own words, so services never
 * import the `stripe` SDK. The one adapter (stripe-provider.ts) talks to Stripe or to the emulator.
 */

export interface ProviderPrice {
  readonly id: string;
  /** The product the price belongs to (coupons are restricted by product). */
  readonly product: string;
  readonly active: boolean;
  readonly recurring: boolean;
  /** How a recurring price charges: per subscribed quantity (`licensed`) or per reported use (`metered`). */
  readonly usageType: 'licensed' | 'metered' | null;
  readonly unitAmount: number | null;
  readonly currency: string;
  /** How often a recurring price charges (`month`…), every `intervalCount` of them; null when one-time. */
  readonly interval: string | null;
  readonly intervalCount: number | null;
  /** The Billing Meter a metered price bills (its usage comes from the meter's events); else null. */
  readonly meter: string | null;
}

/** A Billing Meter: the events named `eventName` it aggregates. */
export interface ProviderMeter {
  readonly id: string;
  readonly eventName: string;
  readonly active: boolean;
}

/** A unit count reported to a meter for a provider customer, de-duplicated by `identifier`. */
export interface MeterEventReport {
  readonly eventName: string;
  readonly customerId: string;
  readonly value: number;
  /** Unique per event: a second report with the same identifier is not counted again. */
  readonly identifier: string;
  readonly timestamp: Date;
}

/** Times are Unix seconds, as the provider gives them, so the coupon rules compare them directly. */
export interface ProviderCoupon {
  readonly id: string;
  /** False once the provider no longer applies it (past `redeem_by`, out of redemptions). */
  readonly valid: boolean;
  /** Products the coupon is limited to; null when it applies to every product. */
  readonly appliesToProducts: readonly string[] | null;
  readonly percentOff: number | null;
  readonly amountOff: number | null;
  /** Currency of a fixed-amount coupon, else null. */
  readonly amountOffCurrency: string | null;
  readonly redeemBy: number | null;
  readonly maxRedemptions: number | null;
  readonly timesRedeemed: number;
}

export interface ProviderPromotionCode {
  readonly id: string;
  readonly code: string;
  readonly active: boolean;
  readonly expiresAt: number | null;
  readonly maxRedemptions: number | null;
  readonly timesRedeemed: number;
  readonly minimumAmount: number | null;
  readonly minimumAmountCurrency: string | null;
  readonly coupon: ProviderCoupon;
}

/**
 * Stripe's subscription statuses, used as they are (`paused` is Stripe's own, for trials that ended
 * without a card). The port owns the list: subscriptions mirror what the provider reports.
 */
export const SUBSCRIPTION_STATUSES = [
  'incomplete',
  'incomplete_expired',
  'trialing',
  'active',
  'past_due',
  'canceled',
  'unpaid',
  'paused',
] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** One item of a subscription: its price's terms and its quantity (what its MRR is made of). */
export interface ProviderSubscriptionItem {
  readonly priceId: string;
  readonly quantity: number;
  readonly unitAmount: number | null;
  readonly currency: string;
  readonly interval: 'day' | 'week' | 'month' | 'year';
  readonly intervalCount: number;
  readonly usageType: 'licensed' | 'metered';
}

/** A discount of a subscription with its coupon's terms, when the provider gave them. */
export interface ProviderSubscriptionDiscount {
  /** The discount's id (`di_…`). */
  readonly id: string;
  /** The coupon's terms; null when only its id was given (a notification does not expand it). */
  readonly coupon: {
    readonly id: string;
    readonly duration: 'once' | 'repeating' | 'forever';
    readonly percentOff: number | null;
    readonly amountOff: number | null;
    readonly currency: string | null;
  } | null;
}

export interface ProviderSubscription {
  readonly id: string;
  readonly customerId: string;
  readonly status: SubscriptionStatus;
  /** Collection paused (`pause_collection` set) while the status stays as it was. */
  readonly collectionPaused: boolean;
  /**
   * The prices of the subscription's items, in Stripe's order. A subscription may have several items
   * (a plan beside metered or add-on items): the plan's item is found by its price, never by position.
   */
  readonly priceIds: readonly string[];
  /** The items, in the same order as `priceIds`. */
  readonly items: readonly ProviderSubscriptionItem[];
  /** Its discounts, in Stripe's order. */
  readonly discounts: readonly ProviderSubscriptionDiscount[];
  /** The end of the current period (the items of a subscription share it). */
  readonly currentPeriodEnd: Date | null;
  readonly cancelAtPeriodEnd: boolean;
  readonly trialEnd: Date | null;
  readonly canceledAt: Date | null;
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * A move of the plan's item, found by its current price, to another price; the metered items of the
 * current plan (its overage prices) the new plan lacks are removed, and the new plan's are added.
 */
export interface PriceChange {
  readonly fromPriceId: string;
  readonly priceId: string;
  readonly prorationBehavior: ProrationBehavior;
  /** The metered prices of the current plan and of the new one (items found by price, never by position). */
  readonly meteredPriceIds?: { readonly from: readonly string[]; readonly to: readonly string[] };
}

/** Stripe's words for how a price change is charged for the rest of the current period. */
export const PRORATION_BEHAVIORS = ['create_prorations', 'none', 'always_invoice'] as const;
export type ProrationBehavior = (typeof PRORATION_BEHAVIORS)[number];

/** What the customer portal of an app offers; one configuration per app, kept up to date by Tollgate. */
export interface PortalConfigurationRequest {
  /** Tollgate's mark on the configuration, so the app's own is found again. */
  readonly appId: string;
  /** The prices a customer may switch among, by product. */
  readonly products: ReadonlyArray<{ readonly product: string; readonly prices: readonly string[] }>;
}

export interface ProviderCheckoutSession {
  readonly id: string;
  readonly status: 'open' | 'complete' | 'expired';
  readonly customerId: string | null;
  readonly customerEmail: string | null;
  readonly customerName: string | null;
  readonly subscriptionId: string | null;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface ProviderInvoice {
  readonly id: string;
  readonly created: Date;
  readonly amountPaid: number;
  readonly currency: string;
  readonly status: string | null;
  readonly hostedInvoiceUrl: string | null;
}

export interface CheckoutSessionRequest {
  readonly priceId: string;
  /** Metered prices (a plan's overage prices) the subscription also gets, as items with no quantity. */
  readonly meteredPriceIds: readonly string[];
  /** An existing provider customer, or the e-mail to prefill for a new one. */
  readonly customer: { readonly id: string } | { readonly email: string };
  readonly successUrl: string;
  readonly cancelUrl: string;
  readonly trialDays: number;
  /** False: a trial may start without a card (Stripe's `payment_method_collection=if_required`). */
  readonly collectPaymentMethodDuringTrial: boolean;
  readonly requireBillingAddress: boolean;
  readonly promotionCodeId: string | null;
  /** The plan's quantity: the seat count of a per-seat plan, else 1. */
  readonly quantity?: number;
  /** On the checkout session. */
  readonly metadata: Readonly<Record<string, string>>;
  /** On the subscription the checkout creates. */
  readonly subscriptionMetadata: Readonly<Record<string, string>>;
}

/** A verified provider notification, reduced to what Tollgate acts on. */
export type ProviderEvent =
  | {
      readonly kind: 'checkout_completed';
      readonly id: string;
      readonly type: string;
      readonly created: number;
      readonly session: ProviderCheckoutSession;
    }
  | {
      readonly kind: 'subscription';
      readonly id: string;
      readonly type: string;
      readonly created: number;
      readonly subscription: ProviderSubscription;
    }
  | {
      readonly kind: 'invoice';
      readonly id: string;
      readonly type: string;
      readonly created: number;
      readonly subscriptionId: string | null;
    }
  | { readonly kind: 'ignored'; readonly id: string; readonly type: string; readonly created: number };

export interface PaymentProvider {
  /** Creates a provider customer; the same idempotency key always yields the same customer. */
  createCustomer(
    input: {
      readonly email: string | null;
      readonly name: string | null;
      readonly metadata: Readonly<Record<string, string>>;
    },
    idempotencyKey: string,
  ): Promise<{ readonly id: string }>;
  /** A provider customer's contact details (as entered at checkout), or null when it does not exist. */
  retrieveCustomer(
    id: string,
  ): Promise<{ readonly id: string; readonly email: string | null; readonly name: string | null } | null>;
  retrievePrice(id: string): Promise<ProviderPrice | null>;
  /** A Billing Meter, or null when it does not exist. */
  retrieveMeter(id: string): Promise<ProviderMeter | null>;
  /** Reports usage to a meter (Stripe's meter event); a repeated identifier is counted once. */
  reportMeterEvent(event: MeterEventReport): Promise<void>;
  /** Cancels a reported meter event by its identifier (Stripe's meter event adjustment), so it is not billed. */
  cancelMeterEvent(input: { readonly eventName: string; readonly identifier: string }): Promise<void>;
  /** A recurring price on a new product (seeding and scripts). */
  createRecurringPrice(input: {
    readonly productName: string;
    readonly unitAmount: number;
    readonly currency: string;
    readonly interval: 'day' | 'week' | 'month' | 'year';
  }): Promise<ProviderPrice>;
  /** The active promotion code with this customer-facing code (case-insensitive), or null. */
  findPromotionCode(code: string): Promise<ProviderPromotionCode | null>;
  createCheckoutSession(
    input: CheckoutSessionRequest,
  ): Promise<{ readonly id: string; readonly url: string; readonly expiresAt: Date }>;
  /**
   * Makes an open checkout session unpayable (Stripe's `checkout.sessions.expire`). A session that is
   * already complete, expired or unknown is left as it is, so a retried call succeeds.
   */
  expireCheckoutSession(id: string): Promise<void>;
  retrieveSubscription(id: string): Promise<ProviderSubscription | null>;
  /** The same idempotency key always yields the first answer, so a retried change is applied once. */
  updateSubscription(
    id: string,
    change: { readonly cancelAtPeriodEnd?: boolean; readonly pauseCollection?: boolean },
    idempotencyKey: string,
  ): Promise<ProviderSubscription>;
  cancelSubscription(id: string, idempotencyKey: string): Promise<ProviderSubscription>;
  /**
   * Moves the subscription's item at `fromPriceId` (the plan's item) to `priceId`; other items stay.
   * Stripe prorates as told.
   */
  changeSubscriptionPrice(
    id: string,
    change: PriceChange,
    idempotencyKey: string,
  ): Promise<ProviderSubscription>;
  /**
   * Sets the quantity of the subscription's item at `priceId` (the plan's item, found by price; other
   * items stay), prorated as told. The absolute quantity, so a repeated call changes nothing more.
   */
  setSubscriptionItemQuantity(
    id: string,
    change: {
      readonly priceId: string;
      readonly quantity: number;
      readonly prorationBehavior: ProrationBehavior;
    },
    idempotencyKey: string,
  ): Promise<ProviderSubscription>;
  /**
   * What such a change would prorate now (minor units, negative for a credit), from Stripe's preview of
   * the next invoice; 0 when nothing is prorated.
   */
  previewPriceChange(
    id: string,
    change: PriceChange,
  ): Promise<{ readonly amount: number; readonly currency: string }>;
  /** Every subscription of a provider customer, canceled ones included, newest first. */
  listSubscriptions(customerId: string): Promise<ProviderSubscription[]>;
  /** The app's portal configuration, created or brought up to date; returns its id. */
  ensurePortalConfiguration(request: PortalConfigurationRequest): Promise<string>;
  /** A short-lived link to the customer portal of a provider customer. */
  createPortalSession(input: {
    readonly customerId: string;
    readonly returnUrl: string;
    readonly configurationId: string;
  }): Promise<{ readonly url: string }>;
  listInvoices(customerId: string, limit: number): Promise<ProviderInvoice[]>;
  /** Verifies a notification's signature on its raw body; a bad or missing signature → ValidationError. */
  verifyEvent(rawBody: Buffer, signature: string | undefined): ProviderEvent;
}
