import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { StripeApiError } from './errors.js';
import { EMULATOR_API_VERSION } from './events.js';
import { expand, expandPaths, publicView } from './expand.js';
import { randomId } from './objects.js';
import type { Obj, Params } from './parameters.js';
import { showCheckoutPage, submitCheckoutPage } from './pay-page.js';
import { showPortalPage, submitPortalCancel, submitPortalCard, submitPortalUpdate } from './portal-page.js';
import { API_ROUTES, HELPER_ROUTES, type Route } from './routes.js';
import type { Emulation } from './state.js';

/**
 * The emulator's HTTP edge: Stripe's form encoding, API-key check, idempotency keys and error bodies
 * around the route table, plus the hosted checkout page and customer portal.
 */
export function createEmulatorApp(em: Emulation) {
  /** Responses by `<api key>:<Idempotency-Key>`, replayed on a retried request. */
  const idempotent = new Map<string, IdempotentAnswer>();

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended');
  app.use(express.urlencoded({ extended: true, limit: '1mb', parameterLimit: 5000 }));

  app.get('/checkout/:id', (req, res) => showCheckoutPage(em, req, res));
  app.post('/checkout/:id/pay', (req, res) => submitCheckoutPage(em, req, res));
  app.get('/portal/:id', (req, res) => showPortalPage(em, req, res));
  app.post('/portal/:id/payment-method', (req, res) => submitPortalCard(em, req, res));
  app.post('/portal/:id/subscriptions/:subscription/cancel', (req, res) => submitPortalCancel(em, req, res));
  app.post('/portal/:id/subscriptions/:subscription/update', (req, res) => submitPortalUpdate(em, req, res));

  const mount = (routes: readonly Route[]): Router => {
    const router = express.Router();
    router.use(authenticate);
    for (const route of routes) {
      router[route.method](route.path, (req: Request, res: Response) =>
        handle(em, idempotent, req, res, route),
      );
    }
    return router;
  };
  app.use('/v1', mount(API_ROUTES));
  app.use('/_emulator', mount(HELPER_ROUTES));

  app.use((req: Request, res: Response) => {
    res.status(404).json(unrecognized(req).body);
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

/** Stripe's answer to a method and path it has no endpoint for (the emulator answers it for what it does not emulate). */
function unrecognized(req: Request): StripeApiError {
  return new StripeApiError(
    404,
    `Unrecognized request URL (${req.method}: ${req.path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
  );
}

/** A first answer under an idempotency key, with what the request was, to refuse the key's reuse for another. */
interface IdempotentAnswer {
  readonly endpoint: string;
  readonly fingerprint: string;
  readonly status: number;
  readonly body: Obj;
}

/** The same parameters however they were ordered on the wire. */
function fingerprint(params: Params): string {
  const canonical = (value: unknown): unknown =>
    value && typeof value === 'object'
      ? Array.isArray(value)
        ? value.map(canonical)
        : Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Params)[k])]),
          )
      : value;
  return JSON.stringify(canonical(params));
}

/** Like stripe-mock: any test-mode secret key is accepted; live keys and missing keys are refused. */
function authenticate(req: Request, res: Response, next: NextFunction): void {
  const header = req.get('authorization') ?? '';
  const bearer = /^Bearer (\S+)$/.exec(header)?.[1];
  const basic = /^Basic (\S+)$/.exec(header)?.[1];
  const key = bearer ?? (basic ? Buffer.from(basic, 'base64').toString('utf8').split(':')[0] : undefined);
  if (!key || !/^(sk|rk)_test_/.test(key)) {
    const message = key
      ? `Invalid API Key provided: ${key.slice(0, 8)}***. The Stripe emulator accepts test-mode keys (sk_test_…).`
      : 'You did not provide an API key.';
    res.status(401).json(new StripeApiError(401, message).body);
    return;
  }
  req.headers['x-emulator-key'] = key;
  next();
}

/**
 * Runs one route: replays a retried idempotent request (refusing the key for other parameters, as Stripe
 * does), expands what `expand` names, saves after a change, answers Stripe's errors.
 */
function handle(
  em: Emulation,
  idempotent: Map<string, IdempotentAnswer>,
  req: Request,
  res: Response,
  route: Route,
): void {
  const mutating = req.method !== 'GET';
  const params = { ...(req.query as Params), ...((req.body ?? {}) as Params) };
  const idempotencyKey = mutating ? req.get('idempotency-key') : undefined;
  const cacheKey = idempotencyKey ? `${req.headers['x-emulator-key']}:${idempotencyKey}` : undefined;
  const endpoint = `${req.method} ${req.baseUrl}${req.path}`;
  const print = fingerprint(params);
  res.setHeader('Request-Id', randomId('req_', 14));
  res.setHeader('Stripe-Version', EMULATOR_API_VERSION);
  const cached = cacheKey ? idempotent.get(cacheKey) : undefined;
  if (cached) {
    const problem =
      cached.endpoint !== endpoint
        ? `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${cached.endpoint}' vs '${endpoint}'). Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`
        : cached.fingerprint !== print
          ? `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`
          : null;
    if (problem) {
      res.status(400).json(new StripeApiError(400, problem, { type: 'idempotency_error' }).body);
      return;
    }
    res.setHeader('Idempotent-Replayed', 'true');
    res.status(cached.status).json(cached.body);
    return;
  }
  let status = 200;
  let body: Obj;
  try {
    body = route.handle(em, params, String(req.params.id ?? ''));
    if (mutating) em.save();
    body = expand(em, publicView(body), expandPaths(params));
  } catch (error) {
    if (!(error instanceof StripeApiError)) throw error;
    status = error.status;
    body = error.body;
  }
  // A copy: a replay answers what the first request answered, not the object as it is since.
  if (cacheKey && status < 500) {
    idempotent.set(cacheKey, { endpoint, fingerprint: print, status, body: structuredClone(body) });
  }
  res.status(status).json(body);
}
