import express, { type Request, type RequestHandler } from 'express';
import { ValidationError } from '../core/errors.js';
import {
  describeInputProblem,
  findInputProblem,
  jsonNestingExceeds,
  MAX_INPUT_DEPTH,
  textProblem,
} from '../core/validation.js';

/**
 * The edge's checks on what Node and Express accept but PostgreSQL, JSON or our routes cannot take.
 * Each refuses with a ValidationError (400 envelope) that names the problem, once for every route, so
 * no such input reaches a service and fails there as a 500.
 */

/**
 * The request path: malformed percent-encoding (the router would throw while decoding a parameter) or a
 * decoded NUL / lone surrogate (a path parameter PostgreSQL cannot compare).
 */
export const requestPathGuard: RequestHandler = (req, _res, next) => {
  let decoded: string;
  try {
    decoded = decodeURIComponent(req.path);
  } catch {
    return next(new ValidationError('path: has malformed percent-encoding'));
  }
  const problem = textProblem(decoded);
  next(problem ? new ValidationError(describeInputProblem({ at: 'path', problem })) : undefined);
};

/**
 * JSON bodies (`application/json`, at most `limit`): nesting is refused by a linear scan before parsing;
 * after parsing, numbers JSON cannot represent (`1e400` parses to Infinity) are refused. Text is left to
 * the transport: REST checks it below, GraphQL in its own error shape (src/graphql/input-values.ts).
 */
export function jsonBody(limit: string): RequestHandler {
  const parse = express.json({
    limit,
    verify: (_req, _res, raw, encoding) => {
      // Other UTF charsets are rare; their nesting is caught after parsing (V8's parser does not recurse).
      if (encoding === 'utf-8' && jsonNestingExceeds(raw)) {
        throw new ValidationError(
          describeInputProblem({ at: 'body', problem: `is nested more than ${MAX_INPUT_DEPTH} levels deep` }),
        );
      }
    },
  });
  return (req, res, next) => {
    parse(req, res, (error?: unknown) => {
      if (error) return next(error);
      const problem = findInputProblem(req.body, 'body', { text: false });
      next(problem ? new ValidationError(describeInputProblem(problem)) : undefined);
    });
  };
}

/** Text PostgreSQL cannot store (NUL, lone surrogates) in a REST request's query parameters or body. */
export const restTextGuard: RequestHandler = (req, _res, next) => {
  const problem = findInputProblem(req.query, 'query') ?? findInputProblem(req.body, 'body');
  next(problem ? new ValidationError(describeInputProblem(problem)) : undefined);
};

/** How many times a header was sent (Node keeps only the first of most repeated headers). */
function headerCount(req: Request, name: string): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() === name) count++;
  }
  return count;
}

/**
 * The one `Authorization` header of a request. Node keeps only the first of several, so a request
 * carrying two would be judged by one credential while a proxy or log may have read the other: such a
 * request is refused rather than guessed at.
 */
export function authorizationHeader(req: Request): string | undefined {
  if (headerCount(req, 'authorization') > 1) {
    throw new ValidationError('Authorization header must be sent at most once');
  }
  return req.headers.authorization;
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host header, or with several, is a 400. Node's own
 * check answers with an empty body, so the server turns it off (src/server.ts) and this one answers.
 */
export const hostHeaderGuard: RequestHandler = (req, _res, next) => {
  const count = headerCount(req, 'host');
  if (count > 1) return next(new ValidationError('Host header must be sent once'));
  if (count === 0 && req.httpVersion === '1.1') return next(new ValidationError('Host header is required'));
  next();
};
