import { customerOrFail } from './customers.js';
import { invalid } from './errors.js';
import { now, randomId } from './objects.js';
import { allow, mergeMetadata, type Obj, type Params, str } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/**
 * Cards entered on the hosted pages (`pm_…`), listed per customer, and `/v1/setup_intents`, which an
 * integration creates to collect a card for later.
 */

export function newCardPaymentMethod(
  em: Emulation,
  cardNumber: string,
  billing: { email?: string | null; name?: string | null; address?: Obj | null },
): Obj {
  const method: Obj = {
    id: randomId('pm_', 24),
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: {
      address: billing.address ?? {
        city: null,
        country: null,
        line1: null,
        line2: null,
        postal_code: null,
        state: null,
      },
      email: billing.email ?? null,
      name: billing.name ?? null,
      phone: null,
      tax_id: null,
    },
    card: {
      brand: cardNumber.startsWith('5') ? 'mastercard' : cardNumber.startsWith('3') ? 'amex' : 'visa',
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
      country: 'US',
      display_brand: cardNumber.startsWith('5')
        ? 'mastercard'
        : cardNumber.startsWith('3')
          ? 'american_express'
          : 'visa',
      exp_month: 12,
      exp_year: new Date().getUTCFullYear() + 5,
      fingerprint: randomId('', 16),
      funding: 'credit',
      generated_from: null,
      last4: cardNumber.slice(-4),
      networks: { available: ['visa'], preferred: null },
      regulated_status: null,
      three_d_secure_usage: { supported: true },
      wallet: null,
    },
    created: now(),
    customer: null,
    customer_account: null,
    livemode: false,
    metadata: {},
    type: 'card',
  };
  em.state.paymentMethods[method.id] = method;
  return method;
}

/** Attaches a card kept by the emulator to a customer (ids it does not keep are left alone). */
export function attachPaymentMethod(em: Emulation, id: string | null, customerId: string): void {
  const method = id ? em.state.paymentMethods[id] : undefined;
  if (method && !method.customer) method.customer = customerId;
}

/** `GET /v1/customers/:id/payment_methods`. */
export function listCustomerPaymentMethods(em: Emulation, customerId: string, params: Params): Obj {
  allow(params, ['type', 'limit', 'starting_after', 'ending_before', 'allow_redisplay']);
  customerOrFail(em, customerId, 'customer');
  const type = str(params, 'type');
  const items = Object.values(em.state.paymentMethods).filter(
    (m) => m.customer === customerId && (type === undefined || m.type === type),
  );
  return listPage(`/v1/customers/${customerId}/payment_methods`, items, params);
}

export function paymentMethodOrFail(em: Emulation, id: string): Obj {
  return findOrFail('PaymentMethod', em.state.paymentMethods, id);
}

/** `POST /v1/setup_intents`: waits for a payment method, as a new one does at Stripe. */
export function createSetupIntent(em: Emulation, params: Params): Obj {
  allow(params, ['customer', 'description', 'metadata', 'payment_method_types', 'usage']);
  const customer = str(params, 'customer');
  if (customer) customerOrFail(em, customer, 'customer');
  const usage = str(params, 'usage') ?? 'off_session';
  if (!['on_session', 'off_session'].includes(usage)) throw invalid('Invalid usage', 'usage');
  const types = params.payment_method_types;
  const paymentMethodTypes = Array.isArray(types)
    ? types.map(String)
    : types
      ? Object.values(types as Obj).map(String)
      : ['card'];
  const id = randomId('seti_', 24);
  const intent: Obj = {
    id,
    object: 'setup_intent',
    application: null,
    automatic_payment_methods: null,
    cancellation_reason: null,
    client_secret: `${id}_secret_${randomId('', 32)}`,
    created: now(),
    customer: customer ?? null,
    description: str(params, 'description') ?? null,
    excluded_payment_method_types: null,
    flow_directions: null,
    last_setup_error: null,
    latest_attempt: null,
    livemode: false,
    mandate: null,
    metadata: mergeMetadata({}, params),
    next_action: null,
    on_behalf_of: null,
    payment_method: null,
    payment_method_configuration_details: null,
    payment_method_options: {},
    payment_method_types: paymentMethodTypes,
    single_use_mandate: null,
    status: 'requires_payment_method',
    usage,
  };
  em.state.setupIntents[id] = intent;
  em.emit('setup_intent.created', intent);
  return intent;
}

export function setupIntentOrFail(em: Emulation, id: string): Obj {
  return findOrFail('setupintent', em.state.setupIntents, id);
}
