import { randomUUID } from 'node:crypto';
import { unwrapResolverError } from '@apollo/server/errors';
import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { GraphQLError } from 'graphql';
import { pinoHttp } from 'pino-http';
import { auditActorOf, withAuditRequest } from './core/audit-context.js';
import { asDomainError, ServiceUnavailableError } from './core/errors.js';
import { ANONYMOUS, type Principal } from './core/principal.js';
import { dashboardRouter } from './dashboard/dashboard.rest.js';
import { connectionPool, databaseReady } from './db.js';
import { createGraphQLServer, graphqlHandler } from './graphql/apollo.js';
import { shareConnectionsPerRequest, withConnectionShare } from './graphql/connection-share.js';
import { createGraphQLContext, type GraphQLContext } from './graphql/context.js';
import { createFormatError } from './graphql/format-error.js';
import { graphiqlRouter } from './graphql/graphiql.js';
import { complexityLimit, depthLimitRule } from './graphql/hardening.js';
import { inputValuesCheck } from './graphql/input-values.js';
import { viewerReadsOnly } from './graphql/operator-roles.js';
import { keepPersistedQuery, PersistedQueryStore, persistedQueries } from './graphql/persisted-queries.js';
import { budgetOf, concurrencyLimit, documentLimits } from './graphql/request-limits.js';
import { createResolverContainer, getSchema } from './graphql-schema.js';
import { accessLineNote } from './infra/access-line.js';
import { oneBarrierPerRequest } from './infra/change-feed.js';
import { redactUrl } from './infra/logger.js';
import { countRoundTrips, type RoundTrips } from './infra/round-trips.js';
import { withUnitOfWork } from './infra/unit-of-work.js';
import { DevMailbox } from './modules/email/dev-mailbox.js';
import { devMailboxRouter } from './modules/email/dev-mailbox.rest.js';
import { idempotencyMiddleware } from './modules/idempotency/idempotency.middleware.js';
import { operatorPrincipal, operatorSessionRouter } from './modules/operators/operator-session.rest.js';
import { rateLimitMiddleware } from './modules/rate-limits/rate-limit.middleware.js';
import { STRIPE_WEBHOOK_PATH, stripeWebhookHandler } from './modules/subscriptions/stripe-webhook.rest.js';
import { apiReferenceRouter } from './rest/api-reference.js';
import { cors, isPreflight } from './rest/cors.js';
import { errorHandler, noteOutage, notFoundHandler, outageOf } from './rest/error-envelope.js';
import { httpMetrics, metricsHandler, noteMount } from './rest/metrics.rest.js';
import {
  authorizationHeader,
  hostHeaderGuard,
  jsonBody,
  rawBody,
  requestPathGuard,
  restTextGuard,
} from './rest/request-guard.js';
import { serviceIndexHandler, serviceIndexRouter } from './rest/service-index.js';
import { transportSecurity } from './rest/transport-security.js';
import { v1Router } from './rest/v1.js';
import type { Deps, Services } from './services.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal: Principal;
  }
}

/** The largest request body read: 100 KiB. */
export const BODY_LIMIT = 100 * 1024;

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The HTTP application: request id + log → unit of work → credentials → rate limit → path and body checks
 * (src/rest/request-guard.ts) → routes (/v1, /graphql) → error envelope. The caller owns the listening
 * server (and drains it on shutdown).
 */
export async function createHttpApp(deps: Deps, services: Services): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // One spelling per path (see src/rest/router.ts): rate-limit classification sees what the router routes.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  // Per-IP rate limits need the real client address when Tollgate runs behind a proxy, and the HTTPS
  // requirement the protocol the client used (X-Forwarded-Proto).
  if (deps.config.trustProxy !== undefined) app.set('trust proxy', deps.config.trustProxy);

  // First, so every answer is counted, refusals included.
  if (deps.metrics) app.use(httpMetrics(deps.metrics, new Set(['/graphql'])));

  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: redactUrl(req.url) }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
      // A request failed by a known database outage gets one warn line with the reason and no stack
      // (pino-http would otherwise invent an error with a stack for every 5xx); bugs keep theirs.
      customLogLevel: (_req, res, err) => {
        if (outageOf(res)) return 'warn';
        return err || res.statusCode >= 500 ? 'error' : 'info';
      },
      customErrorObject: (_req, res, _err, value) => {
        const outage = outageOf(res);
        const db = res.locals.roundTrips;
        return outage ? { ...value, err: undefined, outage, db } : { ...value, db };
      },
      customSuccessObject: (_req, res, value) => {
        const outage = outageOf(res);
        const db = res.locals.roundTrips;
        const noted = accessLineNote(res)?.fields;
        return outage ? { ...value, ...noted, outage, db } : { ...value, ...noted, db };
      },
      // A route may say what became of the request here (src/infra/access-line.ts); else pino-http's words.
      customSuccessMessage: (req, res) =>
        accessLineNote(res)?.message ??
        (!req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted'),
      autoLogging: {
        ignore: (req) => req.url === '/healthz' || req.url === '/readyz' || req.url === '/metrics',
      },
    }),
  );

  // What each request waits for from PostgreSQL, shown in its log line (`db`).
  app.use((_req, res, next) => {
    const tally: RoundTrips = { statements: 0, barriers: 0 };
    res.locals.roundTrips = tally;
    countRoundTrips(tally, next);
  });

  app.use(transportSecurity(deps.config));

  // Stripe's notifications are signed by Stripe, not sent by a client: they carry no credential, spend no
  // client budget and are no browser's, so they are answered here, ahead of the pages, credentials, CORS
  // and rate limit every client request passes. Nor do they get the request's unit of work: the receiver
  // runs its hot statements outside any, and each transaction it opens forks its own
  // (ProviderNotificationsService). Stripe signs the exact bytes it sends, so the body is read raw.
  app.post(
    STRIPE_WEBHOOK_PATH,
    hostHeaderGuard,
    rawBody(BODY_LIMIT),
    (req, _res, next) => {
      req.principal = ANONYMOUS;
      next();
    },
    stripeWebhookHandler(services.providerNotifications),
  );

  const corsRule = cors({
    allowsOrigin: (origin, appId) => services.apps.allowsOrigin(origin, appId),
    production: deps.config.production,
    publicBaseUrl: deps.config.publicBaseUrl,
  });
  // Preflights carry no credential: answered by the CORS rule ahead of every route, so a router that
  // answers OPTIONS from its GET routes (GraphiQL's at /graphql) cannot answer them without CORS headers.
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!isPreflight(req)) return next();
    req.principal = ANONYMOUS;
    withUnitOfWork(deps.orm.em, () => corsRule(req, res, next));
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    // Bounded on its own: a frozen database must make the probe fail, not hang with it.
    const ok = await databaseReady(deps.orm, deps.config.database.readinessTimeoutMs);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'unavailable', database: ok ? 'up' : 'down' });
  });

  if (deps.metrics) app.get('/metrics', metricsHandler(deps.metrics, deps.config));

  app.use(readOnly(serviceIndexRouter(deps.config)));

  // Development only: production requires SMTP_URL, and the guard keeps the mailbox off even if that changes.
  if (deps.mailer instanceof DevMailbox && !deps.config.production) {
    app.use('/dev', noteMount, devMailboxRouter(deps.mailer));
  }

  if (deps.config.graphql.graphiql) app.use(readOnly(graphiqlRouter()));
  if (deps.config.docs) app.use(readOnly(apiReferenceRouter()));
  app.use(readOnly(dashboardRouter()));

  // One unit of work per request, for REST and GraphQL alike, forked when first used.
  app.use((_req, _res, next) => withUnitOfWork(deps.orm.em, next));
  // A REST read takes one change-feed barrier for all its cached lookups (see oneBarrierPerRequest).
  app.use((req, _res, next) => (sharesOneBarrier(req) ? oneBarrierPerRequest(next) : next()));

  app.use(async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const authorization = authorizationHeader(req);
      // A bearer credential always wins; without one, the dashboard's operator cookie may sign the request.
      const operator =
        authorization === undefined || authorization === ''
          ? await operatorPrincipal(req, services.operatorSignIn, deps.config)
          : undefined;
      req.principal =
        operator ??
        (await services.credentials.resolve(authorization, {
          keyConfirmedInStatement: confirmsItsApiKey(req),
        }));
    } catch (error) {
      // Answered (401, or 400 for two Authorization headers) by the rate-limit middleware once counted,
      // so these answers carry the limit headers too.
      req.principal = ANONYMOUS;
      req.credentialError = error;
    }
    next();
  });

  // Writes flushed while serving this request are audited with its actor (src/modules/audit/).
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const actor = auditActorOf(req.principal);
    const request = actor && {
      actor,
      ip: req.ip ?? null,
      userAgent: req.headers['user-agent']?.slice(0, 512) ?? null,
    };
    withAuditRequest(request, next);
  });

  app.use(corsRule);
  app.use(rateLimitMiddleware(services.rateLimits));
  app.use(hostHeaderGuard, requestPathGuard);

  // Bodies are parsed after counting, so malformed or oversized bodies are counted and answered alike.
  app.use(jsonBody(BODY_LIMIT));

  app.use(operatorSessionRouter(services.operatorSignIn, deps.config));

  // Exactly `/v1` (strict routing): guarded, counted and credential-checked like every /v1 answer; no
  // other path changes.
  app.get('/v1', restTextGuard, serviceIndexHandler(deps.config));
  // Idempotency-Key on POSTs: after the guards (a refused request claims no key), before the routes.
  app.use(
    '/v1',
    noteMount,
    restTextGuard,
    idempotencyMiddleware(services.idempotency, 'rest'),
    v1Router(services),
  );

  const limits = deps.config.graphqlLimits;
  // Without introspection the schema is not public, so errors must not hint at it either.
  const hideSuggestions = !deps.config.graphql.introspection;
  shareConnectionsPerRequest(await connectionPool(deps.orm));
  const resolvers = createResolverContainer(services);
  // The response of each operation, so a database outage met by a resolver reaches the access log. Keyed
  // by the request's own logger: Apollo hands plugins a copy of the context object built here.
  const responses = new WeakMap<GraphQLContext['log'], Response>();
  const apollo = await createGraphQLServer<GraphQLContext>({
    schema: await getSchema(),
    introspection: deps.config.graphql.introspection,
    // Pre-validation hook points: `validationRules` run in Apollo's validation, after graphql-js's own;
    // `checks` see the resolved operation and its variables before it runs.
    validationRules: [depthLimitRule(limits.maxDepth)],
    checks: [
      complexityLimit((context) => budgetOf(limits, context.principal)),
      inputValuesCheck,
      viewerReadsOnly,
    ],
    hideSuggestions,
    formatError: createFormatError(deps.logger, { hideSuggestions }),
    logger: deps.logger,
    onErrors: (errors, context) => {
      const res = responses.get(context.log);
      if (res) noteOutageOfErrors(errors, res);
    },
  });
  const persisted = new PersistedQueryStore();
  const graphql = graphqlHandler(
    apollo,
    (req, res) => {
      const context = createGraphQLContext(req, resolvers);
      responses.set(context.log, res);
      return context;
    },
    keepPersistedQuery(persisted),
  );
  // A persisted query's hash becomes its text first, so everything after sees the text. Then cheap
  // refusals (size, aliases, spreads), then a turn among the credential's requests, then Apollo with a
  // capped share of the connection pool.
  app.use(
    '/graphql',
    noteMount,
    persistedQueries(persisted),
    documentLimits(limits),
    // Ahead of the per-credential turns, so repeats waiting for a first answer hold no turn.
    idempotencyMiddleware(services.idempotency, 'graphql'),
    concurrencyLimit(limits, (req, res, next) =>
      withConnectionShare(limits.maxConnectionsPerRequest, () => graphql(req, res, next)),
    ),
  );

  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}

/**
 * A router whose routes are all GET, entered only by the methods it can answer (GET, HEAD, and OPTIONS,
 * which Express answers from GET routes). Any other request walked through each such router for nothing,
 * allocating on the way: a POST to /graphql passed three.
 */
function readOnly(router: RequestHandler): RequestHandler {
  return (req, res, next) =>
    req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS'
      ? router(req, res, next)
      : next();
}

/** Notes a database outage that failed a GraphQL field on the response, for its access-log line. */
function noteOutageOfErrors(errors: readonly GraphQLError[], res: Response): void {
  for (const error of errors) {
    const domain = asDomainError(unwrapResolverError(error));
    if (domain instanceof ServiceUnavailableError) {
      noteOutage(res, domain);
      return;
    }
  }
}

const ENTITLEMENT_TOKEN_PATH = /^\/v1\/apps\/[^/]+\/auth\/entitlement-token$/;
const CUSTOMER_PATH = /^\/v1\/customers\/[^/]+$/;

/**
 * A request whose route checks its API key in its own one statement (a customer's read by id, a
 * customer's creation: see `requireApiKeyConfirmedInStatement`), so a key this instance has cached is
 * taken without a change-feed barrier. Not with an Idempotency-Key: its claim is stored under the key
 * before the route runs.
 */
function confirmsItsApiKey(req: Request): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return CUSTOMER_PATH.test(req.path);
  return (
    req.method === 'POST' && req.path === '/v1/customers' && req.headers['idempotency-key'] === undefined
  );
}

/**
 * A request none of whose writes is followed by a cached lookup that could depend on it: a `/v1` GET
 * (every one but the magic link's verify, a GET that signs in); a consumption, which looks up its
 * credential, customer and entitlements first and then writes only the usage ledger; and an entitlement
 * token's issuance, which writes at most the app's first signing key. No change notice concerns those.
 */
function sharesOneBarrier(req: Request): boolean {
  if (req.method === 'POST') return req.path === '/v1/usage' || ENTITLEMENT_TOKEN_PATH.test(req.path);
  return (
    (req.method === 'GET' || req.method === 'HEAD') &&
    req.path.startsWith('/v1/') &&
    !req.path.endsWith('/auth/verify')
  );
}
