import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import {
  asDomainError,
  type DomainError,
  RateLimitedError,
  ServiceUnavailableError,
  statusOf,
} from '../core/errors.js';

/** The interface's error body: `{statusCode, message, error}` with the standard reason phrase. */
export interface ErrorEnvelope {
  readonly statusCode: number;
  readonly message: string;
  readonly error: string;
}

export function envelope(statusCode: number, message: string): ErrorEnvelope {
  return { statusCode, message, error: STATUS_CODES[statusCode] ?? 'Error' };
}

export function sendError(res: Response, statusCode: number, message: string): void {
  res.status(statusCode).json(envelope(statusCode, message));
}

/** What the access log says about a request that failed because the database could not serve it. */
export interface Outage {
  readonly code: 'service_unavailable';
  readonly reason: string;
}

const outages = new WeakMap<ServerResponse, Outage>();

/**
 * Marks a response as failed by a known outage. Its access-log line (src/app.ts) then carries the reason
 * and no stack: during an outage every request fails alike, so one short line each is all that helps.
 */
export function noteOutage(res: ServerResponse, error: ServiceUnavailableError): void {
  outages.set(res, { code: 'service_unavailable', reason: error.reason });
}

export function outageOf(res: ServerResponse): Outage | undefined {
  return outages.get(res);
}

/** Unknown routes. */
export const notFoundHandler: RequestHandler = (req, res) => {
  sendError(res, 404, `Cannot ${req.method} ${req.path}`);
};

/** Content codings the body reader can decode (body-parser's list; `zstd` where Node has it). */
const CONTENT_CODINGS = 'identity, gzip, deflate, br or zstd';

/** Body-parser failures carry an HTTP status of their own; these are the ones we expose. */
function bodyParserStatus(err: unknown): { status: number; message: string } | undefined {
  const e = err as { type?: string; status?: number; encoding?: string; errno?: unknown };
  switch (e?.type) {
    case 'entity.parse.failed':
      return { status: 400, message: 'Malformed JSON in request body' };
    case 'entity.too.large':
      return { status: 413, message: 'Request body exceeds the 100 KiB limit' };
    case 'encoding.unsupported':
      return {
        status: 400,
        message: `Unsupported Content-Encoding "${printable(e.encoding)}": send ${CONTENT_CODINGS}`,
      };
    case 'charset.unsupported':
      return { status: 415, message: 'Unsupported request body encoding' };
    case 'request.size.invalid':
      return { status: 400, message: 'Request body size does not match its Content-Length' };
    case 'request.aborted':
      return { status: 400, message: 'Request aborted' };
    case undefined:
      // The decompressor (zlib, brotli, zstd) failed: the body is not in the coding its header names.
      if (e?.status === 400 && typeof e.errno === 'number') {
        return { status: 400, message: 'Request body does not match its Content-Encoding' };
      }
      return undefined;
    default:
      return undefined;
  }
}

/** A header value echoed in a message: printable ASCII only, and short. */
function printable(value: unknown): string {
  return String(value ?? '')
    .replace(/[^\x20-\x7e]|"/g, '?')
    .slice(0, 40);
}

/**
 * The envelope has no room for structured details, so the message itself names every field the error
 * concerns: the core writes `field: problem`, and a field the message does not name yet is put in front.
 */
export function messageNamingFields(error: DomainError): string {
  const fields = error.details.fields ?? [];
  const unnamed = fields.filter((field) => !namesField(error.message, field));
  return unnamed.length === 0 ? error.message : `${unnamed.join(', ')}: ${error.message}`;
}

function namesField(message: string, field: string): boolean {
  const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_.])${escaped}($|[^A-Za-z0-9_])`).test(message);
}

/**
 * The single REST error mapper. Domain errors (and database outages, classified as one by
 * `asDomainError`) map through `statusOf` (exhaustive over error codes); anything else is a bug: logged
 * with the request id, answered 500 with no detail.
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (res.headersSent) {
    req.log?.error({ err }, 'error after response started');
    res.end();
    return;
  }
  const domain = asDomainError(err);
  if (domain) {
    const status = statusOf(domain.code);
    if (domain instanceof RateLimitedError && domain.retryAfterSeconds !== undefined) {
      res.setHeader('Retry-After', String(domain.retryAfterSeconds));
    }
    if (domain instanceof ServiceUnavailableError) noteOutage(res, domain);
    else if (status >= 500) req.log?.warn({ err }, 'upstream failure');
    sendError(res, status, messageNamingFields(domain));
    return;
  }
  const parser = bodyParserStatus(err);
  if (parser) {
    sendError(res, parser.status, parser.message);
    return;
  }
  req.log?.error({ err }, 'unhandled error');
  sendError(res, 500, 'Internal server error');
};
