import { customerOrFail } from './customers.js';
import { invalid } from './errors.js';
import { now, randomId } from './objects.js';
import { allow, arr, bool, httpUrl, mergeMetadata, type Obj, obj, type Params, str } from './parameters.js';
import { priceOrFail, productOrFail } from './prices.js';
import { type Emulation, findOrFail, listPage } from './state.js';
import { PRORATION_BEHAVIORS } from './subscriptions.js';

/**
 * `/v1/billing_portal/configurations` and `/v1/billing_portal/sessions`: what the customer portal offers
 * (invoice history, payment method update, cancellation, switching among listed prices) and the
 * short-lived link that opens it. The page itself is in portal-page.ts.
 */

/** How long a portal link stays usable (Stripe's are short-lived too). */
export const PORTAL_SESSION_TTL_S = 3600;

/** What a session without a configuration gets, like an account's default configuration. */
const DEFAULT_FEATURES: Obj = {
  customer_update: { allowed_updates: [], enabled: false },
  invoice_history: { enabled: true },
  payment_method_update: { enabled: true, payment_method_configuration: null },
  subscription_cancel: {
    cancellation_reason: { enabled: false, options: [] },
    enabled: true,
    mode: 'at_period_end',
    proration_behavior: 'none',
  },
  subscription_update: {
    billing_cycle_anchor: null,
    default_allowed_updates: [],
    enabled: false,
    products: [],
    proration_behavior: 'create_prorations',
    schedule_at_period_end: { conditions: [] },
    trial_update_behavior: 'end_trial',
  },
};

function enabledFlag(feature: Params, name: string): boolean {
  const enabled = bool(feature, 'enabled');
  if (enabled === undefined) throw invalid('Missing required param: enabled.', name);
  return enabled;
}

/** Reads `features[…]` onto `current`; only the parts sent change. */
function readFeatures(emulation: Emulation, current: Obj, params: Params): Obj {
  const features = structuredClone(current);
  const sent = obj(params, 'features');
  if (!sent) return features;
  allow(sent, [
    'customer_update',
    'invoice_history',
    'payment_method_update',
    'subscription_cancel',
    'subscription_pause',
    'subscription_update',
  ]);
  const invoices = obj(sent, 'invoice_history');
  if (invoices) features.invoice_history.enabled = enabledFlag(invoices, 'features[invoice_history]');
  const paymentMethod = obj(sent, 'payment_method_update');
  if (paymentMethod) {
    features.payment_method_update.enabled = enabledFlag(paymentMethod, 'features[payment_method_update]');
  }
  const cancel = obj(sent, 'subscription_cancel');
  if (cancel) {
    features.subscription_cancel.enabled = enabledFlag(cancel, 'features[subscription_cancel]');
    const mode = str(cancel, 'mode');
    if (mode !== undefined) {
      if (!['at_period_end', 'immediately'].includes(mode))
        throw invalid('Invalid mode', 'features[subscription_cancel][mode]');
      features.subscription_cancel.mode = mode;
    }
  }
  const update = obj(sent, 'subscription_update');
  if (update) {
    features.subscription_update.enabled = enabledFlag(update, 'features[subscription_update]');
    const allowed = arr(update, 'default_allowed_updates').map(String);
    if (update.default_allowed_updates !== undefined)
      features.subscription_update.default_allowed_updates = allowed;
    const behavior = str(update, 'proration_behavior');
    if (behavior !== undefined) {
      if (!PRORATION_BEHAVIORS.includes(behavior))
        throw invalid('Invalid proration_behavior', 'features[subscription_update][proration_behavior]');
      features.subscription_update.proration_behavior = behavior;
    }
    if (update.products !== undefined) {
      features.subscription_update.products = arr(update, 'products').map((entry, i) => {
        const product = productOrFail(emulation, str(entry, 'product', true)!, `products[${i}][product]`);
        const prices = arr(entry, 'prices').map(String);
        return {
          adjustable_quantity: { enabled: false, maximum: null, minimum: 1 },
          prices,
          product: product.id,
        };
      });
    }
  }
  return features;
}

function checkPrices(emulation: Emulation, features: Obj): void {
  for (const [i, entry] of (features.subscription_update.products as Obj[]).entries()) {
    if (entry.prices.length === 0)
      throw invalid(
        'Each product needs at least one price.',
        `features[subscription_update][products][${i}][prices]`,
      );
    for (const priceId of entry.prices as string[]) {
      const price = priceOrFail(emulation, priceId, `features[subscription_update][products][${i}][prices]`);
      if (price.product !== entry.product)
        throw invalid(
          `The price ${priceId} does not belong to ${entry.product}.`,
          'features[subscription_update][products]',
        );
    }
  }
}

export function createPortalConfiguration(emulation: Emulation, params: Params): Obj {
  allow(params, ['features', 'business_profile', 'default_return_url', 'metadata', 'name', 'login_page']);
  if (!obj(params, 'features')) throw invalid('Missing required param: features.', 'features');
  const features = readFeatures(emulation, DEFAULT_FEATURES, params);
  checkPrices(emulation, features);
  const created = now();
  const returnUrl = str(params, 'default_return_url');
  const configuration: Obj = {
    id: randomId('bpc_', 24),
    object: 'billing_portal.configuration',
    active: true,
    application: null,
    business_profile: { headline: null, privacy_policy_url: null, terms_of_service_url: null },
    created,
    default_return_url: returnUrl ? httpUrl(returnUrl, 'default_return_url') : null,
    features,
    is_default: false,
    livemode: false,
    login_page: { enabled: false, url: null },
    metadata: mergeMetadata({}, params),
    name: str(params, 'name') ?? null,
    updated: created,
  };
  emulation.state.portalConfigurations[configuration.id] = configuration;
  return configuration;
}

export function portalConfigurationOrFail(emulation: Emulation, id: string, param = 'id'): Obj {
  return findOrFail('billing_portal.configuration', emulation.state.portalConfigurations, id, param);
}

export function updatePortalConfiguration(emulation: Emulation, id: string, params: Params): Obj {
  allow(params, [
    'features',
    'business_profile',
    'default_return_url',
    'metadata',
    'name',
    'login_page',
    'active',
  ]);
  const configuration = portalConfigurationOrFail(emulation, id);
  const features = readFeatures(emulation, configuration.features, params);
  checkPrices(emulation, features);
  configuration.features = features;
  const active = bool(params, 'active');
  if (active !== undefined) configuration.active = active;
  configuration.metadata = mergeMetadata(configuration.metadata, params);
  configuration.updated = now();
  return configuration;
}

export function listPortalConfigurations(emulation: Emulation, params: Params): Obj {
  allow(params, ['active', 'is_default', 'limit', 'starting_after']);
  const active = bool(params, 'active');
  const isDefault = bool(params, 'is_default');
  const items = Object.values(emulation.state.portalConfigurations).filter(
    (c) =>
      (active === undefined || c.active === active) &&
      (isDefault === undefined || c.is_default === isDefault),
  );
  return listPage('/v1/billing_portal/configurations', items, params);
}

export function createPortalSession(emulation: Emulation, params: Params): Obj {
  allow(params, ['customer', 'return_url', 'configuration', 'locale', 'on_behalf_of', 'flow_data']);
  const customer = customerOrFail(emulation, str(params, 'customer', true)!, 'customer');
  const configurationId = str(params, 'configuration');
  const configuration = configurationId
    ? portalConfigurationOrFail(emulation, configurationId, 'configuration')
    : null;
  if (configuration && !configuration.active)
    throw invalid('The configuration is not active.', 'configuration');
  const returnUrlParam = str(params, 'return_url') ?? configuration?.default_return_url ?? undefined;
  const returnUrl = returnUrlParam ? httpUrl(returnUrlParam, 'return_url') : null;
  const id = randomId('bps_', 24);
  const session: Obj = {
    id,
    object: 'billing_portal.session',
    configuration: configuration?.id ?? null,
    created: now(),
    customer: customer.id,
    customer_account: null,
    flow: null,
    livemode: false,
    locale: str(params, 'locale') ?? null,
    on_behalf_of: null,
    return_url: returnUrl,
    url: `${emulation.url}/portal/${id}`,
  };
  emulation.state.portalSessions[id] = session;
  return session;
}

/** What the portal of `session` offers: its configuration's features, or the default ones. */
export function portalFeatures(emulation: Emulation, session: Obj): Obj {
  const configuration = session.configuration
    ? emulation.state.portalConfigurations[session.configuration]
    : undefined;
  return configuration?.features ?? DEFAULT_FEATURES;
}
