import { z } from 'zod';

/**
 * The parts of Stripe's notifications Tollgate reads, checked once when a notification arrives. A
 * signed event that lacks what its type requires can never be applied, however often Stripe retries
 * it, so it is refused (400) before anything is written rather than failing later as a 500.
 * Fields Tollgate does not read are not checked (Stripe adds fields over time); objects are stripped
 * to the checked fields, so the mappers in stripe-provider.ts see exactly what was validated.
 */

const id = z.string().min(1);
/** Stripe sends a related object as its id, or expanded as the object itself. */
const expandable = z.union([id, z.object({ id })]);
const metadata = z.record(z.string(), z.string());
const unixSeconds = z.number().int().nonnegative();

const stripeCheckoutSession = z.object({
  id,
  status: z.string().nullish(),
  customer: expandable.nullish(),
  customer_email: z.string().nullish(),
  customer_details: z.object({ email: z.string().nullish(), name: z.string().nullish() }).nullish(),
  subscription: expandable.nullish(),
  metadata: metadata.nullish(),
});

const stripeCoupon = z.object({
  id,
  duration: z.string(),
  percent_off: z.number().nullish(),
  amount_off: z.number().int().nullish(),
  currency: z.string().nullish(),
});

const stripeDiscount = z.object({
  id,
  source: z.object({ coupon: z.union([id, stripeCoupon]).nullish() }).nullish(),
});

const stripeSubscription = z.object({
  id,
  customer: expandable,
  status: z.string().min(1),
  items: z.object({
    data: z.array(
      z.object({
        price: z.object({
          id,
          unit_amount: z.number().int().nullish(),
          currency: z.string().nullish(),
          recurring: z
            .object({
              interval: z.string(),
              interval_count: z.number().int().positive().nullish(),
              usage_type: z.string().nullish(),
            })
            .nullish(),
        }),
        quantity: z.number().int().nonnegative().nullish(),
        current_period_end: unixSeconds.nullish(),
      }),
    ),
  }),
  // Ids in a notification; objects (with their coupon) where Tollgate asked Stripe to expand them.
  discounts: z.array(z.union([id, stripeDiscount])).nullish(),
  cancel_at_period_end: z.boolean(),
  pause_collection: z.object({ behavior: z.string() }).nullish(),
  trial_end: unixSeconds.nullish(),
  canceled_at: unixSeconds.nullish(),
  metadata: metadata.nullish(),
});

const stripeInvoice = z.object({
  id,
  parent: z
    .object({ subscription_details: z.object({ subscription: expandable.nullish() }).nullish() })
    .nullish(),
});

export type StripeCheckoutSessionFields = z.infer<typeof stripeCheckoutSession>;
export type StripeSubscriptionFields = z.infer<typeof stripeSubscription>;
export type StripeInvoiceFields = z.infer<typeof stripeInvoice>;

/** What every event carries, whatever its type. */
const envelope = z.object({ id, type: z.string().min(1), created: unixSeconds });
const carrying = <T extends z.ZodType>(object: T) => z.object({ data: z.object({ object }) });
const checkoutData = carrying(stripeCheckoutSession);
const subscriptionData = carrying(stripeSubscription);
const invoiceData = carrying(stripeInvoice);

/** A verified notification, checked: the events Tollgate applies with their object, any other type ignored. */
export type StripeNotification = z.infer<typeof envelope> &
  (
    | { readonly kind: 'checkout_completed'; readonly object: StripeCheckoutSessionFields }
    | { readonly kind: 'subscription'; readonly object: StripeSubscriptionFields }
    | { readonly kind: 'invoice'; readonly object: StripeInvoiceFields }
    | { readonly kind: 'ignored' }
  );

/** A signed notification Tollgate cannot use: which event (as far as it can be told) and what is wrong. */
export class MalformedNotification extends Error {
  constructor(
    readonly eventId: string | undefined,
    readonly eventType: string | undefined,
    readonly problems: readonly string[],
  ) {
    super(problems.join('; '));
  }
}

/** Checks a verified notification's JSON against the shape its type requires. */
export function parseStripeNotification(json: unknown): StripeNotification {
  const head = envelope.safeParse(json);
  if (!head.success) {
    const raw = isRecord(json) ? json : {};
    throw new MalformedNotification(
      typeof raw.id === 'string' ? raw.id : undefined,
      typeof raw.type === 'string' ? raw.type : undefined,
      problemsOf(head.error, json),
    );
  }
  const event = head.data;
  const objectOf = <T>(schema: z.ZodType<{ data: { object: T } }>): T => {
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new MalformedNotification(event.id, event.type, problemsOf(parsed.error, json));
    return parsed.data.data.object;
  };
  switch (event.type) {
    case 'checkout.session.completed':
      return { ...event, kind: 'checkout_completed', object: objectOf(checkoutData) };
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted':
      return { ...event, kind: 'subscription', object: objectOf(subscriptionData) };
    case 'invoice.paid':
    case 'invoice.payment_failed':
      return { ...event, kind: 'invoice', object: objectOf(invoiceData) };
    default:
      return { ...event, kind: 'ignored' };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How many problems a refusal names: enough to fix the sender, short enough for an answer and a log line. */
const MAX_PROBLEMS = 5;

/** Each problem named by its path; an absent field is called missing rather than "expected …, received undefined". */
function problemsOf(error: z.ZodError, json: unknown): string[] {
  const named = error.issues.slice(0, MAX_PROBLEMS).map((issue) => {
    const path = issue.path.map(String);
    const where = path.length > 0 ? path.join('.') : 'the event';
    let value: unknown = json;
    for (const key of path)
      value =
        typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
    // Optional fields accept undefined, so any issue on an absent value is a required field missing.
    return value === undefined ? `${where} is missing` : `${where}: ${issue.message}`;
  });
  const more = error.issues.length - named.length;
  return more > 0 ? [...named, `and ${more} more`] : named;
}
