import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { RequestContext } from '@mikro-orm/core';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { pinoHttp } from 'pino-http';
import { redactUrl } from './core/logger.js';
import { ANONYMOUS, type Principal } from './core/principal.js';
import { shareConnectionsPerRequest, withConnectionShare } from './graphql/connection-share.js';
import { createGraphQLContext, type GraphQLContext } from './graphql/context.js';
import { createFormatError } from './graphql/format-error.js';
import { graphiqlRouter } from './graphql/graphiql.js';
import { complexityLimitPlugin, depthLimitRule } from './graphql/hardening.js';
import { budgetOf, concurrencyLimit, documentLimits } from './graphql/request-limits.js';
import { getSchema } from './graphql/schema.js';
import { DevMailbox } from './modules/email/dev-mailbox.js';
import { devMailboxRouter } from './modules/email/dev-mailbox.rest.js';
import { STRIPE_WEBHOOK_PATH, stripeWebhookHandler } from './modules/payments/stripe-webhook.rest.js';
import { rateLimitMiddleware } from './modules/rate-limits/rate-limit.middleware.js';
import { errorHandler, notFoundHandler } from './rest/error-envelope.js';
import { v1Router } from './rest/v1.js';
import type { Deps, Services } from './services.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal: Principal;
  }
}

export const BODY_LIMIT = '100kb';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The HTTP application: request id + log → unit of work → credentials → rate limit → body → routes (/v1,
 * /graphql) → error envelope. Returned with a `stop` that drains GraphQL; the caller owns the listening server.
 */
export async function createHttpApp(
  deps: Deps,
  services: Services,
  httpServer: Server,
): Promise<{ app: Express; apollo: ApolloServer<GraphQLContext> }> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Per-IP rate limits need the real client address when Tollgate runs behind a proxy.
  if (deps.config.trustProxy !== undefined) app.set('trust proxy', deps.config.trustProxy);

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
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
    }),
  );

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const ok = await deps.orm.isConnected().catch(() => false);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'unavailable', database: ok ? 'up' : 'down' });
  });

  // Development only: production requires SMTP_URL, and the guard keeps the mailbox off even if that changes.
  if (deps.mailer instanceof DevMailbox && !deps.config.production) {
    app.use('/dev', devMailboxRouter(deps.mailer));
  }

  if (deps.config.graphql.graphiql) app.use(graphiqlRouter());

  // One EntityManager fork per request, for REST and GraphQL alike.
  app.use((_req, _res, next) => RequestContext.create(deps.orm.em, next));

  app.use(async (req: Request, _res: Response, next: NextFunction) => {
    try {
      req.principal = await services.credentials.resolve(req.headers.authorization);
    } catch (error) {
      // Answered (401) by the rate-limit middleware once counted, so a 401 carries the limit headers too.
      req.principal = ANONYMOUS;
      req.credentialError = error;
    }
    next();
  });

  app.use(rateLimitMiddleware(services.rateLimits));

  // Stripe signs the exact bytes it sends, so its notifications are read raw, ahead of the JSON parser.
  app.post(
    STRIPE_WEBHOOK_PATH,
    express.raw({ type: () => true, limit: BODY_LIMIT }),
    stripeWebhookHandler(services),
  );

  // Bodies are parsed after counting, so malformed or oversized bodies are counted and answered alike.
  app.use(express.json({ limit: BODY_LIMIT }));

  app.use('/v1', v1Router(services));

  const limits = deps.config.graphqlLimits;
  // Without introspection the schema is not public, so errors must not hint at it either.
  const hideSuggestions = !deps.config.graphql.introspection;
  const apollo = new ApolloServer<GraphQLContext>({
    schema: await getSchema(),
    introspection: deps.config.graphql.introspection,
    formatError: createFormatError(deps.logger, { hideSuggestions }),
    includeStacktraceInErrorResponses: false,
    // The process owns signal handling (src/main.ts): drain HTTP first, then stop the database.
    stopOnTerminationSignals: false,
    validationRules: [depthLimitRule(limits.maxDepth)],
    validationOptions: { hideSuggestions },
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer }),
      ApolloServerPluginLandingPageDisabled(),
      // Apollo's cache-control plugin hooks the resolution of every field (a wrapper per scalar of every
      // row), only to conclude what is always true here, since no field declares a cache hint: the
      // answer must not be stored. That conclusion is set directly instead.
      ApolloServerPluginCacheControlDisabled(),
      {
        async requestDidStart() {
          return {
            async willSendResponse({ response }) {
              response.http.headers.set('cache-control', 'no-store');
            },
          };
        },
      },
      complexityLimitPlugin<GraphQLContext>((context) => budgetOf(limits, context.principal)),
    ],
  });
  await apollo.start();
  await shareConnectionsPerRequest(deps.orm);
  const graphql = expressMiddleware(apollo, {
    context: async ({ req }) => createGraphQLContext(req, services, deps.orm),
  });
  // Cheap refusals first (size, aliases, spreads), then a turn among the credential's requests, then
  // Apollo with a capped share of the connection pool.
  app.use(
    '/graphql',
    documentLimits(limits),
    concurrencyLimit(limits, (req, res, next) =>
      withConnectionShare(limits.maxConnectionsPerRequest, () => graphql(req, res, next)),
    ),
  );

  app.use(notFoundHandler);
  app.use(errorHandler);
  return { app, apollo };
}
