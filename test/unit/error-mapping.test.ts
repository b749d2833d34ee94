import { Writable } from 'node:stream';
import { DriverException, UniqueConstraintViolationException } from '@mikro-orm/core';
import express from 'express';
import { GraphQLError } from 'graphql';
import { pino } from 'pino';
import { pinoHttp } from 'pino-http';
import request from 'supertest';
import {
  ConflictError,
  DomainError,
  type ErrorCode,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  ServiceUnavailableError,
  statusOf,
  ValidationError,
} from '../../src/core/errors.js';
import { createFormatError } from '../../src/graphql/format-error.js';
import { errorHandler } from '../../src/rest/error-envelope.js';

function capturingLogger() {
  const lines: any[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const SQL_BUG = new Error(
  'insert into "customer" ("id") values ($1) - duplicate key value violates unique constraint at /srv/tollgate/src/x.ts:10',
);

describe('REST error mapping', () => {
  function appThrowing(error: unknown) {
    const { logger, lines } = capturingLogger();
    const app = express();
    app.use(pinoHttp({ logger, genReqId: () => 'req-42' }));
    app.get('/boom', () => {
      throw error;
    });
    app.use(errorHandler);
    return { app, lines };
  }

  it('answers a thrown bug with a bare 500 envelope and logs the details with the request id', async () => {
    const { app, lines } = appThrowing(SQL_BUG);
    const res = await request(app).get('/boom');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      statusCode: 500,
      message: 'Internal server error',
      error: 'Internal Server Error',
    });
    expect(res.text).not.toMatch(/insert|constraint|\/work\/|\.ts:|at /);
    const logged = lines.find((l) => l.msg === 'unhandled error');
    expect(logged.req.id).toBe('req-42');
    expect(logged.err.message).toContain('duplicate key value');
    expect(logged.err.stack).toContain('Error:');
  });

  it.each<[DomainError, number, string]>([
    [new NotFoundError('Customer', 'cus_1'), 404, 'Not Found'],
    [new ForbiddenError(), 403, 'Forbidden'],
    [new ConflictError('A customer with this e-mail already exists'), 409, 'Conflict'],
  ])('maps %p to its status and reason phrase', async (error, status, phrase) => {
    const { app } = appThrowing(error);
    const res = await request(app).get('/boom');
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ statusCode: status, message: error.message, error: phrase });
  });

  it.each<[ValidationError, string]>([
    [ValidationError.forField('planId', 'the app has no plan "x"'), 'planId: the app has no plan "x"'],
    [
      new ValidationError('email: must be a valid e-mail address; unknown field: nmae', {
        fields: ['email', 'nmae'],
      }),
      'email: must be a valid e-mail address; unknown field: nmae',
    ],
    [
      new ValidationError('exactly one is required', { fields: ['customerId', 'organizationId'] }),
      'customerId, organizationId: exactly one is required',
    ],
    [
      new ValidationError('customerId: is required', { fields: ['customerId', 'id'] }),
      'id: customerId: is required',
    ],
    [new ValidationError('Missing Stripe-Signature header'), 'Missing Stripe-Signature header'],
  ])('names every field of %p in the message', async (error, message) => {
    const { app } = appThrowing(error);
    const res = await request(app).get('/boom');
    expect(res.body).toEqual({ statusCode: 400, message, error: 'Bad Request' });
  });

  it('adds Retry-After to a 429', async () => {
    const { app } = appThrowing(new RateLimitedError('Too many requests', 17));
    const res = await request(app).get('/boom');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('17');
    expect(res.body).toEqual({ statusCode: 429, message: 'Too many requests', error: 'Too Many Requests' });
  });

  it('maps every domain error code to a 4xx or 5xx status', () => {
    const codes: ErrorCode[] = [
      'validation_failed',
      'unauthorized',
      'forbidden',
      'not_found',
      'conflict',
      'payload_too_large',
      'rate_limited',
      'provider_error',
      'provider_unavailable',
      'service_unavailable',
    ];
    expect(codes.map(statusOf)).toEqual([400, 401, 403, 404, 409, 413, 429, 502, 503, 503]);
  });
});

/** A driver error as node-postgres raises it: a message, and for server errors a SQLSTATE `code`. */
function pgError(message: string, code?: string, cause?: unknown): Error {
  return Object.assign(new Error(message, { cause }), code ? { code } : {});
}

/** Errors our database gives when it cannot serve us, as they reach the mappers (MikroORM wraps most). */
const OUTAGES: [string, unknown][] = [
  ['a client-side query timeout', new DriverException(pgError('Query read timeout'))],
  ['a pool acquire timeout', new DriverException(pgError('timeout exceeded when trying to connect'))],
  [
    'a connect timeout',
    new DriverException(
      pgError('Connection terminated due to connection timeout', undefined, new Error('timeout expired')),
    ),
  ],
  ['a connection that died', pgError('Connection terminated unexpectedly')],
  ['a connection ended after a timeout', pgError('Client was closed and is not queryable')],
  [
    'a refused connection',
    new DriverException(pgError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')),
  ],
  [
    'statement_timeout',
    new DriverException(pgError('canceling statement due to statement timeout', '57014')),
  ],
  ['a server shutting down', pgError('terminating connection due to administrator command', '57P01')],
  ['a server starting up', pgError('the database system is starting up', '57P03')],
  ['too many connections', pgError('sorry, too many clients already', '53300')],
  [
    'a database closed to new connections',
    new DriverException(pgError('database "tollgate" is not currently accepting connections', '55000')),
  ],
  [
    'idle_in_transaction_session_timeout',
    pgError('terminating connection due to idle-in-transaction timeout', '25P03'),
  ],
];

describe('database outages', () => {
  /** The REST mapper behind a route that throws `error`, with the request's logger captured. */
  async function mapped(error: unknown) {
    const { logger, lines } = capturingLogger();
    const app = express();
    app.get('/boom', () => {
      throw error;
    });
    app.use((err: unknown, req: express.Request, res: express.Response, next: express.NextFunction) => {
      req.log = logger;
      errorHandler(err, req, res, next);
    });
    return { res: await request(app).get('/boom'), lines };
  }

  it.each(OUTAGES)(
    'answers %s with the 503 envelope, revealing nothing, and logs no line of its own',
    async (_, error) => {
      const { logger, lines } = capturingLogger();
      const app = express();
      app.get('/boom', () => {
        throw error;
      });
      app.use((err: unknown, req: express.Request, res: express.Response, next: express.NextFunction) => {
        req.log = logger;
        errorHandler(err, req, res, next);
      });
      const res = await request(app).get('/boom');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        statusCode: 503,
        message: 'The service is temporarily unavailable, try again later',
        error: 'Service Unavailable',
      });
      // The access log reports it, once (src/app.ts; proven in test/security/database-freeze.test.ts).
      expect(lines).toEqual([]);
    },
  );

  it.each(OUTAGES)('answers %s in GraphQL with SERVICE_UNAVAILABLE and status 503', (_, error) => {
    const { logger, lines } = capturingLogger();
    const message = (error as Error).message;
    const out = createFormatError(logger)(
      { message, path: ['apps'] },
      new GraphQLError(message, { originalError: error as Error, path: ['apps'] }),
    );
    expect(out).toEqual({
      message: 'The service is temporarily unavailable, try again later',
      path: ['apps'],
      extensions: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 },
    });
    expect(lines).toEqual([]);
  });

  it('keeps the driver reason for the log only', () => {
    const error = new ServiceUnavailableError('Query read timeout');
    expect(error.reason).toBe('Query read timeout');
    expect(error.message).not.toContain('Query');
  });

  it.each<[string, unknown]>([
    ['a unique violation', new UniqueConstraintViolationException(pgError('duplicate key value', '23505'))],
    ['a syntax error', new DriverException(pgError('syntax error at or near "selec"', '42601'))],
    ['a message that merely mentions a timeout', new Error('Query read timeout while parsing the report')],
    [
      'another object-not-in-prerequisite-state error',
      new DriverException(pgError('cannot lock rows in materialized view "report"', '55000')),
    ],
  ])('still treats %s as a bug (500, logged with its stack)', async (_, error) => {
    const { res, lines } = await mapped(error);
    expect(res.status).toBe(500);
    const logged = lines.find((l) => l.msg === 'unhandled error');
    expect(logged.err.stack).toContain('Error');
  });
});

describe('GraphQL error mapping', () => {
  it('hides a thrown bug behind INTERNAL_SERVER_ERROR and logs it', () => {
    const { logger, lines } = capturingLogger();
    const format = createFormatError(logger);
    const wrapped = new GraphQLError(SQL_BUG.message, { originalError: SQL_BUG, path: ['apps'] });
    const out = format({ message: SQL_BUG.message, path: ['apps'] }, wrapped);
    expect(out).toEqual({
      message: 'Internal server error',
      path: ['apps'],
      extensions: { code: 'INTERNAL_SERVER_ERROR', statusCode: 500 },
    });
    expect(lines[0].err.message).toContain('duplicate key value');
  });

  it('lists the fields a validation error concerns in extensions.fields', () => {
    const { logger } = capturingLogger();
    const error = ValidationError.forField('couponCode', 'Coupon code not found');
    const out = createFormatError(logger)(
      { message: error.message, path: ['createCheckoutSession'] },
      new GraphQLError(error.message, { originalError: error, path: ['createCheckoutSession'] }),
    );
    expect(out).toEqual({
      message: 'couponCode: Coupon code not found',
      path: ['createCheckoutSession'],
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400, fields: ['couponCode'] },
    });
  });

  it('keeps the message of a domain error and adds its code and status', () => {
    const { logger } = capturingLogger();
    const error = new NotFoundError('Customer', 'cus_1');
    const out = createFormatError(logger)(
      { message: error.message, path: ['customer'] },
      new GraphQLError(error.message, { originalError: error, path: ['customer'] }),
    );
    expect(out.extensions).toEqual({ code: 'NOT_FOUND', statusCode: 404 });
    expect(out.message).toBe('Customer cus_1 not found');
  });
});
