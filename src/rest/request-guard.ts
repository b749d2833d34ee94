import express, { type NextFunction, type Request, type RequestHandler } from 'express';
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
 * JSON bodies (`application/json`, at most `limit` bytes): nesting is refused by a linear scan before
 * parsing; after parsing, numbers JSON cannot represent (`1e400` parses to Infinity) are refused. Text is
 * left to the transport: REST checks it below, GraphQL in its own error shape (src/graphql/input-values.ts).
 *
 * The common body (`Content-Type: application/json`, UTF-8 or no charset, a `Content-Length` within the
 * limit, no content coding) is read directly: body-parser's type matching, charset decoding and stream
 * machinery were a tenth of a small GraphQL request's CPU time. Everything else (other JSON types and
 * charsets, compressed or chunked bodies, oversized ones) goes through body-parser. Both answer the same
 * body the same way: an object or array, `{}` for an empty one, and body-parser's error types.
 */
export function jsonBody(limit: number): RequestHandler {
  const parse = express.json({
    limit,
    verify: (_req, _res, raw, encoding) => {
      // Other UTF charsets are rare; their nesting is caught after parsing (V8's parser does not recurse).
      if (encoding === 'utf-8' && jsonNestingExceeds(raw)) throw tooDeep();
    },
  });
  const checked = (req: Request, next: NextFunction) => (error?: unknown) => {
    if (error) return next(error);
    const problem = findInputProblem(req.body, 'body', { text: false });
    next(problem ? new ValidationError(describeInputProblem(problem)) : undefined);
  };
  return (req, res, next) => {
    const length = plainJsonLength(req, limit);
    if (length === undefined) return parse(req, res, checked(req, next));
    readBody(req, length).then((raw) => {
      try {
        req.body = parseJsonBody(raw);
      } catch (error) {
        return next(error);
      }
      checked(req, next)();
    }, next);
  };
}

/**
 * The body as bytes (`req.body`, a Buffer), whatever its type, at most `limit` bytes: for a signature
 * over the exact bytes sent (Stripe's notifications). A body with a `Content-Length` within the limit and
 * no coding is read directly, as `jsonBody` reads JSON; anything else goes through body-parser's raw
 * parser, which answers the same body the same way.
 */
export function rawBody(limit: number): RequestHandler {
  const parse = express.raw({ type: () => true, limit });
  return (req, res, next) => {
    const length = plainLength(req, limit);
    if (length === undefined) return parse(req, res, next);
    readBody(req, length).then((raw) => {
      req.body = raw;
      next();
    }, next);
  };
}

function tooDeep(): ValidationError {
  return new ValidationError(
    describeInputProblem({ at: 'body', problem: `is nested more than ${MAX_INPUT_DEPTH} levels deep` }),
  );
}

/** The JSON body's length when it can be read directly (see `jsonBody`), else undefined. */
function plainJsonLength(req: Request, limit: number): number | undefined {
  const type = req.headers['content-type'];
  if (type !== 'application/json' && type?.toLowerCase() !== 'application/json; charset=utf-8') {
    return undefined;
  }
  return plainLength(req, limit);
}

/** The body's length when it can be read directly: no coding, a `Content-Length` within the limit. */
function plainLength(req: Request, limit: number): number | undefined {
  const headers = req.headers;
  if (headers['transfer-encoding'] !== undefined) return undefined;
  const coding = headers['content-encoding'];
  if (coding !== undefined && coding.toLowerCase() !== 'identity') return undefined;
  const declared = headers['content-length'];
  if (declared === undefined || !/^[0-9]{1,9}$/.test(declared)) return undefined;
  const length = Number(declared);
  return length > 0 && length <= limit ? length : undefined;
}

/** An error of the kind body-parser reports (`type` is what the error envelope maps). */
function bodyError(type: string, message: string): Error {
  return Object.assign(new Error(message), { type, status: 400, statusCode: 400, expose: true });
}

/** The request's body, `length` bytes as its header says (Node's parser never hands over more). */
function readBody(req: Request, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
    };
    const onEnd = () => {
      cleanup();
      if (received === length)
        resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received));
      else reject(bodyError('request.size.invalid', 'request size did not match content length'));
    };
    const onAborted = () => {
      cleanup();
      reject(bodyError('request.aborted', 'request aborted'));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('error', onAborted);
      req.off('close', onAborted);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    // The client went away before the whole body came.
    req.on('aborted', onAborted);
    req.on('error', onAborted);
    req.on('close', onAborted);
  });
}

/** Where JSON's whitespace (space, tab, line feed, carriage return) ends: the text's length if it never does. */
function firstNonWhitespace(text: string): number {
  let i = 0;
  for (; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) break;
  }
  return i;
}

/** body-parser's strict JSON: an object or array (after a byte-order mark and whitespace), else its error type. */
function parseJsonBody(raw: Buffer): unknown {
  if (jsonNestingExceeds(raw)) throw tooDeep();
  const start = raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? 3 : 0;
  const text = raw.toString('utf8', start);
  if (text.length === 0) return {};
  const first = text[firstNonWhitespace(text)];
  if (first !== '{' && first !== '[') {
    throw bodyError('entity.parse.failed', `Unexpected token ${first} in JSON`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw bodyError('entity.parse.failed', (error as Error).message);
  }
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
