import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../core/logger.js';
import { renderCheckoutPage } from './checkout-page.js';
import { DEFAULT_RETRY, type RetryPolicy, WebhookSender, type WebhookTarget } from './webhook-sender.js';

/**
 * A Stripe-compatible HTTP server for the calls Tollgate makes, so the unmodified `stripe` SDK runs
 * against it in development and tests: form-encoded parameters, Stripe's object shapes (API version
 * of the SDK in use), Stripe's error body, idempotency keys, a hosted checkout page and signed webhooks.
 * Development and test tooling only; production talks to Stripe.
 */

type Obj = Record<string, any>;
type Params = Record<string, unknown>;

export const EMULATOR_API_VERSION = '2026-10-28.endive';

const DAY = 86_400;
const INTERVAL_SECONDS: Record<string, number> = {
  day: DAY,
  week: 7 * DAY,
  month: 30 * DAY,
  year: 365 * DAY,
};

class StripeApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: { type?: string; code?: string; param?: string } = {},
  ) {
    super(message);
  }

  get body(): Obj {
    return {
      error: {
        type: this.extra.type ?? 'invalid_request_error',
        message: this.message,
        ...(this.extra.code
          ? {
              code: this.extra.code,
              doc_url: `https://stripe.com/docs/error-codes/${this.extra.code.replaceAll('_', '-')}`,
            }
          : {}),
        ...(this.extra.param ? { param: this.extra.param } : {}),
      },
    };
  }
}

const missing = (kind: string, id: string, param = 'id') =>
  new StripeApiError(404, `No such ${kind}: '${id}'`, { code: 'resource_missing', param });

const invalid = (message: string, param?: string) =>
  new StripeApiError(400, message, { code: param ? 'parameter_invalid' : undefined, param });

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function randomId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += BASE62[b % 62];
  return `${prefix}${out}`;
}

const now = (): number => Math.floor(Date.now() / 1000);

// ---- parameter readers (form values arrive as strings) ----

function allow(params: Params, names: readonly string[]): void {
  for (const key of Object.keys(params)) {
    if (key !== 'expand' && !names.includes(key)) throw invalid(`Received unknown parameter: ${key}`, key);
  }
}

function str(params: Params, name: string, required = false): string | undefined {
  const value = params[name];
  if (value === undefined || value === '') {
    if (required) throw invalid(`Missing required param: ${name}.`, name);
    return undefined;
  }
  if (typeof value !== 'string') throw invalid(`Invalid string: ${name}`, name);
  return value;
}

function int(params: Params, name: string, required = false): number | undefined {
  const value = str(params, name, required);
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw invalid(`Invalid integer: ${value}`, name);
  return Number(value);
}

function num(params: Params, name: string): number | undefined {
  const value = str(params, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw invalid(`Invalid decimal: ${value}`, name);
  return n;
}

function bool(params: Params, name: string): boolean | undefined {
  const value = str(params, name);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw invalid(`Invalid boolean: ${value}`, name);
  return value === 'true';
}

function obj(params: Params, name: string): Params | undefined {
  const value = params[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`Invalid object`, name);
  return value as Params;
}

/** Indexed form arrays (`x[0][y]=…`) arrive as arrays or, past the parser's limit, as objects. */
function arr(params: Params, name: string): Params[] {
  const value = params[name];
  if (value === undefined || value === '') return [];
  if (Array.isArray(value)) return value as Params[];
  if (typeof value === 'object' && value !== null) return Object.values(value) as Params[];
  throw invalid(`Invalid array`, name);
}

/** Stripe's metadata rule: keys sent are set, a key sent empty is removed, `metadata=` clears all. */
function mergeMetadata(current: Obj, params: Params): Obj {
  if (params.metadata === '') return {};
  const update = obj(params, 'metadata');
  if (!update) return current;
  const next = { ...current };
  for (const [key, value] of Object.entries(update)) {
    if (value === '' || value === null) delete next[key];
    else next[key] = String(value);
  }
  return next;
}

function httpUrl(value: string, param: string): string {
  try {
    const url = new URL(value.replaceAll('{CHECKOUT_SESSION_ID}', 'x'));
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // fall through to the error
  }
  throw invalid('Not a valid URL', param);
}

interface State {
  customers: Record<string, Obj>;
  products: Record<string, Obj>;
  prices: Record<string, Obj>;
  coupons: Record<string, Obj>;
  promotionCodes: Record<string, Obj>;
  checkoutSessions: Record<string, Obj>;
  subscriptions: Record<string, Obj>;
  invoices: Record<string, Obj>;
  events: Record<string, Obj>;
}

const emptyState = (): State => ({
  customers: {},
  products: {},
  prices: {},
  coupons: {},
  promotionCodes: {},
  checkoutSessions: {},
  subscriptions: {},
  invoices: {},
  events: {},
});

export interface StripeEmulatorOptions {
  /** Default 0: a free port. */
  readonly port?: number;
  readonly host?: string;
  /** Where events go; may also be set later with `setWebhookTarget` (e.g. once the app's port is known). */
  readonly webhook?: WebhookTarget;
  readonly retry?: RetryPolicy;
  readonly logger?: Logger;
  /** Keep the state in this JSON file across restarts (development); in memory only when unset. */
  readonly stateFile?: string;
}

export class StripeEmulator {
  readonly #server: Server;
  readonly #sender: WebhookSender;
  readonly #stateFile: string | undefined;
  #state: State;
  /** Responses by `<api key>:<Idempotency-Key>`, replayed on a retried request. */
  readonly #idempotent = new Map<string, { status: number; body: Obj }>();
  #url = '';

  private constructor(options: StripeEmulatorOptions) {
    this.#sender = new WebhookSender(options.retry ?? DEFAULT_RETRY, options.logger);
    this.#sender.setTarget(options.webhook);
    this.#stateFile = options.stateFile;
    // The state file may be the first thing written under DATA_DIR (e.g. with DATABASE_URL and ADMIN_TOKEN set).
    if (this.#stateFile) mkdirSync(path.dirname(this.#stateFile), { recursive: true });
    this.#state =
      this.#stateFile && existsSync(this.#stateFile)
        ? { ...emptyState(), ...(JSON.parse(readFileSync(this.#stateFile, 'utf8')) as Partial<State>) }
        : emptyState();
    this.#server = createServer(this.#app());
  }

  /** Starts an emulator listening on `options.port` (default: a free port) on loopback. */
  static async start(options: StripeEmulatorOptions = {}): Promise<StripeEmulator> {
    const emulator = new StripeEmulator(options);
    const host = options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      emulator.#server.once('error', reject);
      emulator.#server.listen(options.port ?? 0, host, () => {
        emulator.#server.off('error', reject);
        resolve();
      });
    });
    const { port } = emulator.#server.address() as AddressInfo;
    emulator.#url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    return emulator;
  }

  /** Base URL, e.g. `http://127.0.0.1:12111`. */
  get url(): string {
    return this.#url;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  setWebhookTarget(target: WebhookTarget | undefined): void {
    this.#sender.setTarget(target);
  }

  /** Every delivery attempt so far (tests use it to observe retries). */
  get deliveries() {
    return this.#sender.deliveries;
  }

  /** Every event created so far, oldest first. */
  get events(): Obj[] {
    return Object.values(this.#state.events);
  }

  /**
   * Ends a subscription's current period (or trial) now, as Stripe's clock would: the next invoice is
   * charged (`fail: true` declines it, leaving the subscription `past_due`), or a trial without a card
   * whose settings say so is canceled. Time does not pass in the emulator on its own; this stands in.
   */
  renewSubscription(id: string, options: { readonly fail?: boolean } = {}): Obj {
    const subscription = this.#subscription(id);
    if (subscription.status === 'canceled') throw invalid('A canceled subscription cannot be renewed.');
    const before = structuredClone(subscription);
    const item = subscription.items.data[0];
    const start = now();
    const trialing = subscription.status === 'trialing';
    if (
      trialing &&
      !subscription.default_payment_method &&
      subscription.trial_settings?.end_behavior?.missing_payment_method === 'cancel'
    ) {
      Object.assign(subscription, {
        status: 'canceled',
        trial_end: start,
        canceled_at: start,
        ended_at: start,
        cancellation_details: { comment: null, feedback: null, reason: 'cancellation_requested' },
      });
      this.#emit('customer.subscription.deleted', subscription);
      this.#save();
      return subscription;
    }
    if (trialing) subscription.trial_end = start;
    item.current_period_start = start;
    item.current_period_end =
      start + INTERVAL_SECONDS[item.price.recurring.interval]! * item.price.recurring.interval_count;
    subscription.status = options.fail ? 'past_due' : 'active';
    const invoice = this.#newInvoice(subscription, 'subscription_cycle', null);
    if (options.fail) {
      Object.assign(invoice, {
        status: 'open',
        amount_paid: 0,
        amount_remaining: invoice.amount_due,
        status_transitions: { ...invoice.status_transitions, paid_at: null },
      });
    }
    subscription.latest_invoice = invoice.id;
    this.#emit('invoice.created', invoice);
    this.#emit('invoice.finalized', invoice);
    this.#emit(options.fail ? 'invoice.payment_failed' : 'invoice.paid', invoice);
    this.#emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
    this.#save();
    return subscription;
  }

  async close(): Promise<void> {
    await this.#sender.close();
    await new Promise<void>((resolve) => {
      if (!this.#server.listening) return resolve();
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  // ---- HTTP ----

  #app() {
    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    app.set('query parser', 'extended');
    app.use(express.urlencoded({ extended: true, limit: '1mb', parameterLimit: 5000 }));

    app.get('/checkout/:id', (req, res) => this.#checkoutPage(req, res));
    app.post('/checkout/:id/pay', (req, res) => this.#pay(req, res));

    const api = express.Router();
    api.use((req, _res, next) => this.#authenticate(req, next));
    const route = (handler: (params: Params, id: string) => Obj) => (req: Request, res: Response) =>
      this.#handle(req, res, handler);

    api.post(
      '/customers',
      route((p) => this.#createCustomer(p)),
    );
    api.get(
      '/customers',
      route((p) => this.#listCustomers(p)),
    );
    api.get(
      '/customers/:id',
      route((_p, id) => this.#customer(id)),
    );
    api.post(
      '/customers/:id',
      route((p, id) => this.#updateCustomer(id, p)),
    );
    api.post(
      '/products',
      route((p) => this.#createProduct(p)),
    );
    api.get(
      '/products/:id',
      route((_p, id) => this.#product(id)),
    );
    api.post(
      '/prices',
      route((p) => this.#createPrice(p)),
    );
    api.get(
      '/prices',
      route((p) => this.#list('/v1/prices', Object.values(this.#state.prices), p)),
    );
    api.get(
      '/prices/:id',
      route((_p, id) => this.#price(id)),
    );
    api.post(
      '/coupons',
      route((p) => this.#createCoupon(p)),
    );
    api.get(
      '/coupons/:id',
      route((_p, id) => this.#coupon(id)),
    );
    api.post(
      '/promotion_codes',
      route((p) => this.#createPromotionCode(p)),
    );
    api.get(
      '/promotion_codes',
      route((p) => this.#listPromotionCodes(p)),
    );
    api.get(
      '/promotion_codes/:id',
      route((p, id) => this.#promotionCode(id, p)),
    );
    api.post(
      '/promotion_codes/:id',
      route((p, id) => this.#updatePromotionCode(id, p)),
    );
    api.post(
      '/checkout/sessions',
      route((p) => this.#createCheckoutSession(p)),
    );
    api.get(
      '/checkout/sessions/:id',
      route((_p, id) => this.#checkoutSession(id)),
    );
    api.get(
      '/subscriptions',
      route((p) => this.#listSubscriptions(p)),
    );
    api.get(
      '/subscriptions/:id',
      route((_p, id) => this.#subscription(id)),
    );
    api.post(
      '/subscriptions/:id',
      route((p, id) => this.#updateSubscription(id, p)),
    );
    api.delete(
      '/subscriptions/:id',
      route((p, id) => this.#cancelSubscription(id, p)),
    );
    api.get(
      '/invoices',
      route((p) => this.#listInvoices(p)),
    );
    api.get(
      '/invoices/:id',
      route((_p, id) => this.#invoice(id)),
    );
    api.get(
      '/events',
      route((p) => this.#list('/v1/events', Object.values(this.#state.events), p)),
    );
    api.get(
      '/events/:id',
      route((_p, id) => this.#get('event', this.#state.events, id)),
    );
    app.use('/v1', api);

    // Emulator-only: what Stripe's own clock does at the end of a period, on request (scripts, demos).
    const helpers = express.Router();
    helpers.use((req, _res, next) => this.#authenticate(req, next));
    helpers.post(
      '/subscriptions/:id/renew',
      route((p, id) => this.renewSubscription(id, { fail: bool(p, 'fail') ?? false })),
    );
    app.use('/_emulator', helpers);

    app.use((req: Request, res: Response) => {
      const error = new StripeApiError(404, `Unrecognized request URL (${req.method}: ${req.path}).`);
      res.status(404).json(error.body);
    });
    app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
      const status = (err as { status?: number }).status ?? 500;
      const error =
        status < 500
          ? new StripeApiError(400, 'Invalid request body')
          : new StripeApiError(500, 'An unexpected error occurred', { type: 'api_error' });
      res.status(error.status).json(error.body);
    });
    return app;
  }

  /** Like stripe-mock: any test-mode secret key is accepted; live keys and missing keys are refused. */
  #authenticate(req: Request, next: NextFunction): void {
    const header = req.get('authorization') ?? '';
    const bearer = /^Bearer (\S+)$/.exec(header)?.[1];
    const basic = /^Basic (\S+)$/.exec(header)?.[1];
    const key = bearer ?? (basic ? Buffer.from(basic, 'base64').toString('utf8').split(':')[0] : undefined);
    if (!key || !/^(sk|rk)_test_/.test(key)) {
      const message = key
        ? `Invalid API Key provided: ${key.slice(0, 8)}***. The Stripe emulator accepts test-mode keys (sk_test_…).`
        : 'You did not provide an API key.';
      const error = new StripeApiError(401, message);
      req.res?.status(401).json(error.body);
      return;
    }
    req.headers['x-emulator-key'] = key;
    next();
  }

  #handle(req: Request, res: Response, handler: (params: Params, id: string) => Obj): void {
    const mutating = req.method !== 'GET';
    const idempotencyKey = mutating ? req.get('idempotency-key') : undefined;
    const cacheKey = idempotencyKey ? `${req.headers['x-emulator-key']}:${idempotencyKey}` : undefined;
    const cached = cacheKey ? this.#idempotent.get(cacheKey) : undefined;
    if (cached) {
      res.setHeader('Idempotent-Replayed', 'true');
      res.status(cached.status).json(cached.body);
      return;
    }
    let status = 200;
    let body: Obj;
    try {
      const params = { ...(req.query as Params), ...((req.body ?? {}) as Params) };
      body = handler(params, String(req.params.id ?? ''));
      if (mutating) this.#save();
    } catch (error) {
      if (!(error instanceof StripeApiError)) throw error;
      status = error.status;
      body = error.body;
    }
    res.setHeader('Request-Id', randomId('req_', 14));
    res.setHeader('Stripe-Version', EMULATOR_API_VERSION);
    if (cacheKey && status < 500) this.#idempotent.set(cacheKey, { status, body });
    res.status(status).json(body);
  }

  #save(): void {
    if (!this.#stateFile) return;
    const tmp = `${this.#stateFile}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.#state), { mode: 0o600 });
    renameSync(tmp, this.#stateFile);
  }

  #get(kind: string, table: Record<string, Obj>, id: string, param = 'id'): Obj {
    const found = table[id];
    if (!found) throw missing(kind, id, param);
    return found;
  }

  #list(url: string, items: Obj[], params: Params): Obj {
    const limit = int(params, 'limit') ?? 10;
    if (limit < 1 || limit > 100) throw invalid('This value must be between 1 and 100.', 'limit');
    // Newest first, like Stripe; items created in the same second keep reverse insertion order.
    let sorted = items
      .map((item, i) => ({ item, i }))
      .sort((a, b) => b.item.created - a.item.created || b.i - a.i);
    const after = str(params, 'starting_after');
    if (after) {
      const index = sorted.findIndex(({ item }) => item.id === after);
      sorted = index === -1 ? [] : sorted.slice(index + 1);
    }
    return {
      object: 'list',
      data: sorted.slice(0, limit).map(({ item }) => item),
      has_more: sorted.length > limit,
      url,
    };
  }

  #emit(type: string, object: Obj, previous?: Obj): void {
    const event: Obj = {
      id: randomId('evt_'),
      object: 'event',
      api_version: EMULATOR_API_VERSION,
      created: now(),
      data: { object: structuredClone(object), ...(previous ? { previous_attributes: previous } : {}) },
      livemode: false,
      pending_webhooks: this.#sender.target ? 1 : 0,
      request: { id: null, idempotency_key: null },
      type,
    };
    this.#state.events[event.id] = event;
    this.#sender.send(event.id, event);
  }

  // ---- customers ----

  #createCustomer(params: Params): Obj {
    allow(params, ['email', 'name', 'description', 'metadata', 'phone', 'address']);
    const customer = this.#newCustomer({
      email: str(params, 'email') ?? null,
      name: str(params, 'name') ?? null,
      description: str(params, 'description') ?? null,
      phone: str(params, 'phone') ?? null,
      address: obj(params, 'address') ?? null,
      metadata: mergeMetadata({}, params),
    });
    return customer;
  }

  #newCustomer(fields: Obj): Obj {
    const customer: Obj = {
      id: randomId('cus_', 14),
      object: 'customer',
      address: null,
      balance: 0,
      created: now(),
      currency: null,
      default_source: null,
      delinquent: false,
      description: null,
      discount: null,
      email: null,
      invoice_prefix: randomId('', 8).toUpperCase(),
      invoice_settings: {
        custom_fields: null,
        default_payment_method: null,
        footer: null,
        rendering_options: null,
      },
      livemode: false,
      metadata: {},
      name: null,
      phone: null,
      preferred_locales: [],
      shipping: null,
      tax_exempt: 'none',
      test_clock: null,
      ...fields,
    };
    this.#state.customers[customer.id] = customer;
    this.#emit('customer.created', customer);
    return customer;
  }

  #customer(id: string): Obj {
    return this.#get('customer', this.#state.customers, id);
  }

  #updateCustomer(id: string, params: Params): Obj {
    allow(params, ['email', 'name', 'description', 'metadata', 'phone', 'address']);
    const customer = this.#customer(id);
    for (const key of ['email', 'name', 'description', 'phone'] as const) {
      if (params[key] !== undefined) customer[key] = str(params, key) ?? null;
    }
    if (params.address !== undefined) customer.address = obj(params, 'address') ?? null;
    customer.metadata = mergeMetadata(customer.metadata, params);
    this.#emit('customer.updated', customer);
    return customer;
  }

  #listCustomers(params: Params): Obj {
    allow(params, ['email', 'limit', 'starting_after']);
    const email = str(params, 'email');
    const items = Object.values(this.#state.customers).filter(
      (c) => email === undefined || c.email === email,
    );
    return this.#list('/v1/customers', items, params);
  }

  // ---- products and prices ----

  #createProduct(params: Params): Obj {
    allow(params, ['id', 'name', 'description', 'active', 'metadata']);
    const id = str(params, 'id') ?? randomId('prod_', 14);
    if (this.#state.products[id]) throw invalid(`Product already exists.`, 'id');
    return this.#newProduct(id, params);
  }

  #newProduct(id: string, params: Params): Obj {
    const created = now();
    const product: Obj = {
      id,
      object: 'product',
      active: bool(params, 'active') ?? true,
      created,
      default_price: null,
      description: str(params, 'description') ?? null,
      images: [],
      livemode: false,
      metadata: mergeMetadata({}, params),
      name: str(params, 'name', true),
      type: 'service',
      updated: created,
      url: null,
    };
    this.#state.products[id] = product;
    return product;
  }

  #product(id: string): Obj {
    return this.#get('product', this.#state.products, id);
  }

  #createPrice(params: Params): Obj {
    allow(params, [
      'currency',
      'unit_amount',
      'recurring',
      'product',
      'product_data',
      'nickname',
      'lookup_key',
      'metadata',
      'active',
    ]);
    const currency = str(params, 'currency', true)!.toLowerCase();
    const unitAmount = int(params, 'unit_amount', true)!;
    if (unitAmount < 0) throw invalid('This value must be greater than or equal to 0.', 'unit_amount');
    const productData = obj(params, 'product_data');
    let productId = str(params, 'product');
    if (productId) this.#get('product', this.#state.products, productId, 'product');
    else if (productData) productId = this.#newProduct(randomId('prod_', 14), productData).id;
    else throw invalid('Missing required param: product.', 'product');
    const recurringParams = obj(params, 'recurring');
    let recurring: Obj | null = null;
    if (recurringParams) {
      const interval = str(recurringParams, 'interval', true)!;
      if (!INTERVAL_SECONDS[interval])
        throw invalid(
          `Invalid recurring[interval]: must be one of day, week, month, or year`,
          'recurring[interval]',
        );
      recurring = {
        interval,
        interval_count: int(recurringParams, 'interval_count') ?? 1,
        meter: null,
        trial_period_days: null,
        usage_type: 'licensed',
      };
    }
    const price: Obj = {
      id: randomId('price_', 24),
      object: 'price',
      active: bool(params, 'active') ?? true,
      billing_scheme: 'per_unit',
      created: now(),
      currency,
      custom_unit_amount: null,
      livemode: false,
      lookup_key: str(params, 'lookup_key') ?? null,
      metadata: mergeMetadata({}, params),
      nickname: str(params, 'nickname') ?? null,
      product: productId,
      recurring,
      tax_behavior: 'unspecified',
      tiers_mode: null,
      transform_quantity: null,
      type: recurring ? 'recurring' : 'one_time',
      unit_amount: unitAmount,
      unit_amount_decimal: String(unitAmount),
    };
    this.#state.prices[price.id] = price;
    return price;
  }

  #price(id: string, param = 'id'): Obj {
    return this.#get('price', this.#state.prices, id, param);
  }

  // ---- coupons and promotion codes ----

  #createCoupon(params: Params): Obj {
    allow(params, [
      'id',
      'name',
      'percent_off',
      'amount_off',
      'currency',
      'duration',
      'duration_in_months',
      'max_redemptions',
      'redeem_by',
      'applies_to',
      'metadata',
    ]);
    const percentOff = num(params, 'percent_off');
    const amountOff = int(params, 'amount_off');
    if ((percentOff === undefined) === (amountOff === undefined)) {
      throw invalid('You must pass exactly one of percent_off or amount_off.');
    }
    if (percentOff !== undefined && (percentOff <= 0 || percentOff > 100))
      throw invalid('Invalid percent_off', 'percent_off');
    if (amountOff !== undefined && !str(params, 'currency'))
      throw invalid('Missing required param: currency.', 'currency');
    const duration = str(params, 'duration') ?? 'once';
    if (!['once', 'repeating', 'forever'].includes(duration)) throw invalid('Invalid duration', 'duration');
    const id = str(params, 'id') ?? randomId('', 8);
    if (this.#state.coupons[id]) throw invalid('Coupon already exists.', 'id');
    const appliesTo = obj(params, 'applies_to');
    const coupon: Obj = {
      id,
      object: 'coupon',
      amount_off: amountOff ?? null,
      created: now(),
      currency: str(params, 'currency')?.toLowerCase() ?? null,
      duration,
      duration_in_months: int(params, 'duration_in_months') ?? null,
      livemode: false,
      max_redemptions: int(params, 'max_redemptions') ?? null,
      metadata: mergeMetadata({}, params),
      name: str(params, 'name') ?? null,
      percent_off: percentOff ?? null,
      redeem_by: int(params, 'redeem_by') ?? null,
      times_redeemed: 0,
      valid: true,
      ...(appliesTo ? { applies_to: { products: arr(appliesTo, 'products').map(String) } } : {}),
    };
    this.#state.coupons[id] = coupon;
    return this.#couponView(coupon);
  }

  /** `valid` is derived: a coupon past `redeem_by` or out of redemptions cannot be applied. */
  #couponView(coupon: Obj): Obj {
    const valid =
      (coupon.redeem_by === null || coupon.redeem_by > now()) &&
      (coupon.max_redemptions === null || coupon.times_redeemed < coupon.max_redemptions);
    coupon.valid = valid;
    return coupon;
  }

  #coupon(id: string, param = 'id'): Obj {
    return this.#couponView(this.#get('coupon', this.#state.coupons, id, param));
  }

  #createPromotionCode(params: Params): Obj {
    allow(params, [
      'promotion',
      'coupon',
      'code',
      'active',
      'expires_at',
      'max_redemptions',
      'customer',
      'restrictions',
      'metadata',
    ]);
    const promotion = obj(params, 'promotion');
    const couponId = (promotion ? str(promotion, 'coupon') : undefined) ?? str(params, 'coupon');
    if (!couponId) throw invalid('Missing required param: promotion[coupon].', 'promotion[coupon]');
    this.#coupon(couponId, 'promotion[coupon]');
    const code = str(params, 'code') ?? randomId('', 8).toUpperCase();
    if (!/^[a-zA-Z0-9]{1,500}$/.test(code)) throw invalid('Invalid code', 'code');
    const taken = Object.values(this.#state.promotionCodes).some(
      (p) => p.active && p.code.toLowerCase() === code.toLowerCase(),
    );
    if (taken) throw invalid('An active promotion code with `code` already exists.', 'code');
    const restrictions = obj(params, 'restrictions') ?? {};
    const promotionCode: Obj = {
      id: randomId('promo_', 24),
      object: 'promotion_code',
      active: bool(params, 'active') ?? true,
      code,
      created: now(),
      customer: str(params, 'customer') ?? null,
      customer_account: null,
      expires_at: int(params, 'expires_at') ?? null,
      livemode: false,
      max_redemptions: int(params, 'max_redemptions') ?? null,
      metadata: mergeMetadata({}, params),
      promotion: { coupon: couponId, type: 'coupon' },
      restrictions: {
        first_time_transaction: bool(restrictions, 'first_time_transaction') ?? false,
        minimum_amount: int(restrictions, 'minimum_amount') ?? null,
        minimum_amount_currency: str(restrictions, 'minimum_amount_currency')?.toLowerCase() ?? null,
      },
      times_redeemed: 0,
    };
    this.#state.promotionCodes[promotionCode.id] = promotionCode;
    return promotionCode;
  }

  /** Promotion codes with `promotion.coupon` expanded, as callers that check restrictions need it. */
  #promotionCodeView(promotionCode: Obj, expand: unknown): Obj {
    const wanted = Array.isArray(expand)
      ? expand.map(String)
      : typeof expand === 'object' && expand
        ? Object.values(expand).map(String)
        : [];
    if (!wanted.some((e) => e.endsWith('promotion.coupon'))) return promotionCode;
    return {
      ...promotionCode,
      promotion: { ...promotionCode.promotion, coupon: this.#coupon(promotionCode.promotion.coupon) },
    };
  }

  #listPromotionCodes(params: Params): Obj {
    allow(params, ['code', 'active', 'coupon', 'customer', 'limit', 'starting_after']);
    const code = str(params, 'code');
    const active = bool(params, 'active');
    const coupon = str(params, 'coupon');
    const items = Object.values(this.#state.promotionCodes).filter(
      (p) =>
        (code === undefined || p.code.toLowerCase() === code.toLowerCase()) &&
        (active === undefined || p.active === active) &&
        (coupon === undefined || p.promotion.coupon === coupon),
    );
    const page = this.#list('/v1/promotion_codes', items, params);
    return { ...page, data: page.data.map((p: Obj) => this.#promotionCodeView(p, params.expand)) };
  }

  #promotionCode(id: string, params: Params = {}): Obj {
    return this.#promotionCodeView(
      this.#get('promotion code', this.#state.promotionCodes, id),
      params.expand,
    );
  }

  #updatePromotionCode(id: string, params: Params): Obj {
    allow(params, ['active', 'metadata']);
    const promotionCode = this.#get('promotion code', this.#state.promotionCodes, id);
    const active = bool(params, 'active');
    if (active !== undefined) promotionCode.active = active;
    promotionCode.metadata = mergeMetadata(promotionCode.metadata, params);
    return promotionCode;
  }

  /** The reason Stripe would refuse to apply a promotion code to a price, or null when it applies. */
  #promotionCodeProblem(promotionCode: Obj, price: Obj): string | null {
    const coupon = this.#coupon(promotionCode.promotion.coupon);
    if (!promotionCode.active) return `The promotion code \`${promotionCode.code}\` is not active.`;
    if (promotionCode.expires_at !== null && promotionCode.expires_at <= now()) {
      return `The promotion code \`${promotionCode.code}\` has expired.`;
    }
    if (
      promotionCode.max_redemptions !== null &&
      promotionCode.times_redeemed >= promotionCode.max_redemptions
    ) {
      return `The promotion code \`${promotionCode.code}\` has reached its maximum number of redemptions.`;
    }
    if (!coupon.valid) return `The coupon \`${coupon.id}\` is no longer valid.`;
    if (coupon.applies_to && !coupon.applies_to.products.includes(price.product)) {
      return `The promotion code \`${promotionCode.code}\` cannot be applied to the products in this session.`;
    }
    const { minimum_amount: minimum, minimum_amount_currency: minimumCurrency } = promotionCode.restrictions;
    if (minimum !== null && (minimumCurrency !== price.currency || price.unit_amount < minimum)) {
      return `The promotion code \`${promotionCode.code}\` requires a minimum amount of ${minimum} ${minimumCurrency}.`;
    }
    return null;
  }

  // ---- checkout sessions ----

  #createCheckoutSession(params: Params): Obj {
    allow(params, [
      'mode',
      'line_items',
      'success_url',
      'cancel_url',
      'customer',
      'customer_email',
      'client_reference_id',
      'metadata',
      'subscription_data',
      'payment_method_collection',
      'billing_address_collection',
      'discounts',
      'allow_promotion_codes',
    ]);
    const mode = str(params, 'mode', true);
    if (mode !== 'subscription')
      throw invalid('The Stripe emulator supports only mode=subscription.', 'mode');
    const successUrl = httpUrl(str(params, 'success_url', true)!, 'success_url');
    const cancelUrlParam = str(params, 'cancel_url');
    const cancelUrl = cancelUrlParam ? httpUrl(cancelUrlParam, 'cancel_url') : null;
    const customerId = str(params, 'customer');
    const customerEmail = str(params, 'customer_email');
    if (customerId && customerEmail)
      throw invalid(
        'You may only specify one of these parameters: customer, customer_email.',
        'customer_email',
      );
    if (customerId) this.#get('customer', this.#state.customers, customerId, 'customer');
    const lineItems = arr(params, 'line_items');
    if (lineItems.length !== 1)
      throw invalid('The Stripe emulator supports exactly one line item.', 'line_items');
    const price = this.#price(str(lineItems[0]!, 'price', true)!, 'line_items[0][price]');
    if (!price.recurring)
      throw invalid(
        'You must provide at least one recurring price in `subscription` mode.',
        'line_items[0][price]',
      );
    if (!price.active) throw invalid(`The price \`${price.id}\` is not active.`, 'line_items[0][price]');
    const quantity = int(lineItems[0]!, 'quantity') ?? 1;
    const subscriptionData = obj(params, 'subscription_data') ?? {};
    allow(subscriptionData, ['metadata', 'trial_period_days', 'trial_settings', 'description']);
    const trialDays = int(subscriptionData, 'trial_period_days') ?? 0;
    if (trialDays < 0 || trialDays > 730)
      throw invalid('Invalid trial_period_days', 'subscription_data[trial_period_days]');
    const missingPaymentMethod =
      str(
        obj(obj(subscriptionData, 'trial_settings') ?? {}, 'end_behavior') ?? {},
        'missing_payment_method',
      ) ?? 'create_invoice';
    const paymentMethodCollection = str(params, 'payment_method_collection') ?? 'always';
    if (!['always', 'if_required'].includes(paymentMethodCollection))
      throw invalid('Invalid payment_method_collection', 'payment_method_collection');
    const billingAddressCollection = str(params, 'billing_address_collection') ?? 'auto';
    if (!['auto', 'required'].includes(billingAddressCollection))
      throw invalid('Invalid billing_address_collection', 'billing_address_collection');
    const discounts = arr(params, 'discounts');
    if (discounts.length > 1) throw invalid('You may only specify one discount.', 'discounts');
    let discount: Obj | null = null;
    if (discounts.length === 1) {
      const promotionCodeId = str(discounts[0]!, 'promotion_code');
      const couponId = str(discounts[0]!, 'coupon');
      if (promotionCodeId) {
        const promotionCode = this.#get(
          'promotion code',
          this.#state.promotionCodes,
          promotionCodeId,
          'discounts[0][promotion_code]',
        );
        const problem = this.#promotionCodeProblem(promotionCode, price);
        if (problem) throw invalid(problem, 'discounts[0][promotion_code]');
        discount = { coupon: null, promotion_code: promotionCodeId };
      } else if (couponId) {
        const coupon = this.#coupon(couponId, 'discounts[0][coupon]');
        if (!coupon.valid)
          throw invalid(`The coupon \`${couponId}\` is no longer valid.`, 'discounts[0][coupon]');
        discount = { coupon: couponId, promotion_code: null };
      }
    }
    if (discount && bool(params, 'allow_promotion_codes')) {
      throw invalid(
        'You may only specify one of these parameters: allow_promotion_codes, discounts.',
        'discounts',
      );
    }
    const id = randomId('cs_test_', 58);
    const created = now();
    const session: Obj = {
      id,
      object: 'checkout.session',
      allow_promotion_codes: bool(params, 'allow_promotion_codes') ?? null,
      amount_subtotal: price.unit_amount * quantity,
      amount_total: this.#discounted(price.unit_amount * quantity, discount),
      billing_address_collection: billingAddressCollection,
      cancel_url: cancelUrl,
      client_reference_id: str(params, 'client_reference_id') ?? null,
      created,
      currency: price.currency,
      customer: customerId ?? null,
      customer_creation: customerId ? null : 'always',
      customer_details: null,
      customer_email: customerEmail ?? null,
      discounts: discount ? [discount] : [],
      expires_at: created + DAY,
      invoice: null,
      livemode: false,
      metadata: mergeMetadata({}, params),
      mode,
      payment_method_collection: paymentMethodCollection,
      payment_status: 'unpaid',
      status: 'open',
      subscription: null,
      success_url: successUrl,
      url: `${this.#url}/checkout/${id}`,
    };
    // Kept beside the session (Stripe does not echo these back) for the subscription made on payment.
    this.#state.checkoutSessions[id] = {
      ...session,
      _line: { price: price.id, quantity },
      _subscription_data: {
        metadata: mergeMetadata({}, subscriptionData),
        trial_period_days: trialDays,
        missing_payment_method: missingPaymentMethod,
      },
    };
    return session;
  }

  #checkoutSession(id: string): Obj {
    const stored = this.#get('checkout.session', this.#state.checkoutSessions, id);
    const { _line, _subscription_data, ...session } = stored;
    if (session.status === 'open' && session.expires_at <= now()) stored.status = session.status = 'expired';
    return session;
  }

  #discounted(amount: number, discount: Obj | null): number {
    if (!discount) return amount;
    const couponId = discount.coupon ?? this.#state.promotionCodes[discount.promotion_code]?.promotion.coupon;
    const coupon = couponId ? this.#state.coupons[couponId] : undefined;
    if (!coupon) return amount;
    if (coupon.percent_off !== null) return Math.round(amount * (1 - coupon.percent_off / 100));
    return Math.max(0, amount - (coupon.amount_off ?? 0));
  }

  #checkoutView(stored: Obj, form: Obj, error: string | null) {
    const price = this.#state.prices[stored._line.price]!;
    const product = this.#state.products[price.product];
    const trialDays: number = stored._subscription_data.trial_period_days;
    const amount = (
      this.#discounted(price.unit_amount * stored._line.quantity, stored.discounts[0] ?? null) / 100
    ).toFixed(2);
    const interval =
      price.recurring.interval_count > 1
        ? `${price.recurring.interval_count} ${price.recurring.interval}s`
        : price.recurring.interval;
    const promotionCode = stored.discounts[0]?.promotion_code
      ? this.#state.promotionCodes[stored.discounts[0].promotion_code]
      : undefined;
    const couponId = stored.discounts[0]?.coupon ?? promotionCode?.promotion.coupon;
    const coupon = couponId ? this.#state.coupons[couponId] : undefined;
    const customer = stored.customer ? this.#state.customers[stored.customer] : undefined;
    const closedReason =
      stored.status === 'complete'
        ? 'This checkout session is already complete.'
        : stored.status === 'expired' || stored.expires_at <= now()
          ? 'This checkout session has expired.'
          : null;
    return {
      sessionId: stored.id,
      productName: product?.name ?? 'Subscription',
      amountLabel: `${amount} ${String(price.currency).toUpperCase()} / ${interval}`,
      trialDays,
      discountLabel: coupon
        ? `${promotionCode?.code ?? coupon.id} (${coupon.percent_off !== null ? `${coupon.percent_off}% off` : `${(coupon.amount_off / 100).toFixed(2)} off`})`
        : null,
      email: customer?.email ?? stored.customer_email ?? form.email ?? null,
      askEmail: !customer && !stored.customer_email,
      askCard: this.#requiresCard(stored),
      askAddress: stored.billing_address_collection === 'required',
      cancelUrl: stored.cancel_url,
      error,
      closedReason,
    };
  }

  #requiresCard(stored: Obj): boolean {
    return stored.payment_method_collection === 'always' || stored._subscription_data.trial_period_days === 0;
  }

  #checkoutPage(req: Request, res: Response): void {
    const stored = this.#state.checkoutSessions[String(req.params.id)];
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    if (!stored) {
      res.status(404).send('<!doctype html><title>Not found</title><p>No such checkout session.</p>');
      return;
    }
    res.status(200).send(renderCheckoutPage(this.#checkoutView(stored, {}, null)));
  }

  /** Paying: the customer (if new), the subscription, its first invoice, the events, then 303 to success_url. */
  #pay(req: Request, res: Response): void {
    const stored = this.#state.checkoutSessions[String(req.params.id)];
    res.setHeader('cache-control', 'no-store');
    if (!stored) {
      res
        .status(404)
        .type('html')
        .send('<!doctype html><title>Not found</title><p>No such checkout session.</p>');
      return;
    }
    const form = (req.body ?? {}) as Record<string, unknown>;
    const text = (name: string) => (typeof form[name] === 'string' ? (form[name] as string).trim() : '');
    const fail = (status: number, message: string) => {
      res
        .status(status)
        .type('html')
        .send(renderCheckoutPage(this.#checkoutView(stored, { email: text('email') }, message)));
    };
    const view = this.#checkoutView(stored, {}, null);
    if (view.closedReason) {
      fail(409, view.closedReason);
      return;
    }
    if (view.askEmail && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text('email'))) {
      fail(400, 'Enter a valid email address.');
      return;
    }
    let paymentMethod: string | null = null;
    if (view.askCard) {
      const card = text('card_number').replace(/[\s-]/g, '');
      if (!/^\d{12,19}$/.test(card)) {
        fail(400, 'Your card number is incomplete.');
        return;
      }
      if (card === '4000000000000002') {
        fail(402, 'Your card was declined.');
        return;
      }
      paymentMethod = randomId('pm_', 24);
    }
    let address: Obj | null = null;
    if (view.askAddress) {
      const line1 = text('address_line1');
      const city = text('address_city');
      const postalCode = text('address_postal_code');
      const country = text('address_country').toUpperCase();
      if (!line1 || !city || !postalCode || !/^[A-Z]{2}$/.test(country)) {
        fail(400, 'Your billing address is incomplete.');
        return;
      }
      address = { city, country, line1, line2: null, postal_code: postalCode, state: null };
    }
    const name = text('name') || null;

    const customer =
      (stored.customer ? this.#state.customers[stored.customer] : undefined) ??
      this.#newCustomer({ email: stored.customer_email ?? text('email'), name, address });
    if (paymentMethod) customer.invoice_settings.default_payment_method = paymentMethod;

    const subscription = this.#newSubscription(stored, customer.id, paymentMethod);
    const invoice = this.#newInvoice(subscription, 'subscription_create', stored.discounts[0] ?? null);
    subscription.latest_invoice = invoice.id;

    const promotionCodeId = stored.discounts[0]?.promotion_code;
    const couponId =
      stored.discounts[0]?.coupon ??
      (promotionCodeId ? this.#state.promotionCodes[promotionCodeId]?.promotion.coupon : undefined);
    if (promotionCodeId) this.#state.promotionCodes[promotionCodeId]!.times_redeemed += 1;
    if (couponId) this.#state.coupons[couponId]!.times_redeemed += 1;

    stored.status = 'complete';
    stored.payment_status = invoice.amount_due > 0 ? 'paid' : 'no_payment_required';
    stored.customer = customer.id;
    stored.subscription = subscription.id;
    stored.invoice = invoice.id;
    stored.customer_details = {
      address,
      email: customer.email,
      name: name ?? customer.name,
      phone: null,
      tax_exempt: 'none',
      tax_ids: [],
    };

    this.#emit('customer.subscription.created', subscription);
    this.#emit('invoice.created', invoice);
    this.#emit('invoice.finalized', invoice);
    this.#emit('invoice.paid', invoice);
    this.#emit('checkout.session.completed', this.#checkoutSession(stored.id));
    this.#save();

    res.redirect(303, stored.success_url.replaceAll('{CHECKOUT_SESSION_ID}', stored.id));
  }

  // ---- subscriptions and invoices ----

  #newSubscription(stored: Obj, customerId: string, paymentMethod: string | null): Obj {
    const created = now();
    const price = this.#state.prices[stored._line.price]!;
    const trialDays: number = stored._subscription_data.trial_period_days;
    const trialEnd = trialDays > 0 ? created + trialDays * DAY : null;
    const periodEnd =
      trialEnd ?? created + INTERVAL_SECONDS[price.recurring.interval]! * price.recurring.interval_count;
    const id = randomId('sub_', 24);
    const subscription: Obj = {
      id,
      object: 'subscription',
      application: null,
      billing_cycle_anchor: periodEnd,
      cancel_at: null,
      cancel_at_period_end: false,
      canceled_at: null,
      cancellation_details: { comment: null, feedback: null, reason: null },
      collection_method: 'charge_automatically',
      created,
      currency: price.currency,
      customer: customerId,
      days_until_due: null,
      default_payment_method: paymentMethod,
      description: null,
      discounts: stored.discounts.length > 0 ? [randomId('di_', 24)] : [],
      ended_at: null,
      items: {
        object: 'list',
        data: [
          {
            id: randomId('si_', 14),
            object: 'subscription_item',
            created,
            current_period_end: periodEnd,
            current_period_start: created,
            discounts: [],
            metadata: {},
            price,
            quantity: stored._line.quantity,
            subscription: id,
            tax_rates: [],
          },
        ],
        has_more: false,
        total_count: 1,
        url: `/v1/subscription_items?subscription=${id}`,
      },
      latest_invoice: null,
      livemode: false,
      metadata: { ...stored._subscription_data.metadata },
      pause_collection: null,
      start_date: created,
      status: trialEnd ? 'trialing' : 'active',
      test_clock: null,
      trial_end: trialEnd,
      trial_settings: {
        end_behavior: { missing_payment_method: stored._subscription_data.missing_payment_method },
      },
      trial_start: trialEnd ? created : null,
    };
    this.#state.subscriptions[id] = subscription;
    return subscription;
  }

  #newInvoice(subscription: Obj, billingReason: string, discount: Obj | null): Obj {
    const item = subscription.items.data[0];
    const created = now();
    const inTrial = subscription.status === 'trialing';
    const subtotal = inTrial ? 0 : item.price.unit_amount * item.quantity;
    const total = inTrial ? 0 : this.#discounted(subtotal, discount);
    const id = randomId('in_', 24);
    const invoice: Obj = {
      id,
      object: 'invoice',
      account_country: 'US',
      amount_due: total,
      amount_paid: total,
      amount_remaining: 0,
      attempt_count: total > 0 ? 1 : 0,
      attempted: total > 0,
      billing_reason: billingReason,
      collection_method: 'charge_automatically',
      created,
      currency: subscription.currency,
      customer: subscription.customer,
      customer_email: this.#state.customers[subscription.customer]?.email ?? null,
      hosted_invoice_url: `${this.#url}/invoices/${id}`,
      invoice_pdf: `${this.#url}/invoices/${id}/pdf`,
      lines: { object: 'list', data: [], has_more: false, url: `/v1/invoices/${id}/lines` },
      livemode: false,
      metadata: {},
      number: `${this.#state.customers[subscription.customer]?.invoice_prefix ?? 'EMU'}-${String(Object.keys(this.#state.invoices).length + 1).padStart(4, '0')}`,
      parent: {
        quote_details: null,
        subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id },
        type: 'subscription_details',
      },
      period_end: created,
      period_start: created,
      status: 'paid',
      status_transitions: {
        finalized_at: created,
        marked_uncollectible_at: null,
        paid_at: created,
        voided_at: null,
      },
      subtotal,
      total,
    };
    this.#state.invoices[id] = invoice;
    return invoice;
  }

  #subscription(id: string): Obj {
    return this.#get('subscription', this.#state.subscriptions, id);
  }

  #listSubscriptions(params: Params): Obj {
    allow(params, ['customer', 'status', 'price', 'limit', 'starting_after']);
    const customer = str(params, 'customer');
    const status = str(params, 'status');
    const price = str(params, 'price');
    const items = Object.values(this.#state.subscriptions).filter(
      (s) =>
        (customer === undefined || s.customer === customer) &&
        (price === undefined || s.items.data[0].price.id === price) &&
        // Like Stripe: without a status filter, canceled subscriptions are left out; `all` includes them.
        (status === 'all' || (status === undefined ? s.status !== 'canceled' : s.status === status)),
    );
    return this.#list('/v1/subscriptions', items, params);
  }

  #updateSubscription(id: string, params: Params): Obj {
    allow(params, [
      'cancel_at_period_end',
      'pause_collection',
      'metadata',
      'trial_end',
      'items',
      'default_payment_method',
      'proration_behavior',
      'description',
    ]);
    const subscription = this.#subscription(id);
    const before = structuredClone(subscription);
    if (subscription.status === 'canceled') {
      throw invalid('A canceled subscription can only update its cancellation_details and metadata.');
    }
    const cancelAtPeriodEnd = bool(params, 'cancel_at_period_end');
    if (cancelAtPeriodEnd !== undefined) {
      subscription.cancel_at_period_end = cancelAtPeriodEnd;
      subscription.cancel_at = cancelAtPeriodEnd ? subscription.items.data[0].current_period_end : null;
      subscription.canceled_at = cancelAtPeriodEnd ? now() : null;
    }
    if (params.pause_collection === '') {
      subscription.pause_collection = null;
    } else if (params.pause_collection !== undefined) {
      const pause = obj(params, 'pause_collection')!;
      const behavior = str(pause, 'behavior', true)!;
      if (!['keep_as_draft', 'mark_uncollectible', 'void'].includes(behavior)) {
        throw invalid('Invalid pause_collection[behavior]', 'pause_collection[behavior]');
      }
      subscription.pause_collection = { behavior, resumes_at: int(pause, 'resumes_at') ?? null };
    }
    const trialEnd = str(params, 'trial_end');
    if (trialEnd === 'now' && subscription.status === 'trialing') {
      const item = subscription.items.data[0];
      const start = now();
      subscription.trial_end = start;
      subscription.status = 'active';
      item.current_period_start = start;
      item.current_period_end =
        start + INTERVAL_SECONDS[item.price.recurring.interval]! * item.price.recurring.interval_count;
    } else if (trialEnd !== undefined && trialEnd !== 'now') {
      const end = int(params, 'trial_end')!;
      subscription.trial_end = end;
      subscription.items.data[0].current_period_end = end;
      if (end > now()) subscription.status = 'trialing';
    }
    const items = arr(params, 'items');
    if (items.length > 0) {
      const priceId = str(items[0]!, 'price');
      if (priceId) subscription.items.data[0].price = this.#price(priceId, 'items[0][price]');
    }
    const paymentMethod = str(params, 'default_payment_method');
    if (paymentMethod) subscription.default_payment_method = paymentMethod;
    const description = str(params, 'description');
    if (description !== undefined) subscription.description = description;
    subscription.metadata = mergeMetadata(subscription.metadata, params);
    this.#emit('customer.subscription.updated', subscription, changedAttributes(before, subscription));
    return subscription;
  }

  #cancelSubscription(id: string, params: Params): Obj {
    allow(params, ['invoice_now', 'prorate', 'cancellation_details']);
    const subscription = this.#subscription(id);
    if (subscription.status === 'canceled') throw invalid(`No such subscription: '${id}'`);
    const at = now();
    subscription.status = 'canceled';
    subscription.canceled_at = at;
    subscription.ended_at = at;
    subscription.cancel_at = null;
    subscription.cancel_at_period_end = false;
    subscription.cancellation_details = { comment: null, feedback: null, reason: 'cancellation_requested' };
    this.#emit('customer.subscription.deleted', subscription);
    return subscription;
  }

  #listInvoices(params: Params): Obj {
    allow(params, ['customer', 'subscription', 'status', 'limit', 'starting_after']);
    const customer = str(params, 'customer');
    const subscription = str(params, 'subscription');
    const status = str(params, 'status');
    const items = Object.values(this.#state.invoices).filter(
      (i) =>
        (customer === undefined || i.customer === customer) &&
        (subscription === undefined || i.parent?.subscription_details?.subscription === subscription) &&
        (status === undefined || i.status === status),
    );
    return this.#list('/v1/invoices', items, params);
  }

  #invoice(id: string): Obj {
    return this.#get('invoice', this.#state.invoices, id);
  }
}

/** Stripe's `previous_attributes`: the top-level fields that changed, with their old values. */
function changedAttributes(before: Obj, after: Obj): Obj {
  const previous: Obj = {};
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) previous[key] = before[key] ?? null;
  }
  return previous;
}
