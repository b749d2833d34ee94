import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../infra/logger.js';
import { envelope } from './error-envelope.js';

/** What Node's HTTP parser reports when it refuses a request (see `clientError` in node:http). */
interface ClientError extends Error {
  readonly code?: string;
  /** How far into `rawPacket` the parser got before it failed. */
  readonly bytesParsed?: number;
  /** The chunk of the connection being parsed: may hold credentials, so it is never logged. */
  readonly rawPacket?: Buffer;
}

/** The answer to a request Node refused before Express saw it. */
export function clientErrorAnswer(error: ClientError): { status: number; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW': {
      // Node limits the request line and headers together; if no line has ended yet, the URL is at fault.
      const parsed = error.rawPacket?.subarray(0, error.bytesParsed ?? error.rawPacket.length);
      return parsed !== undefined && !parsed.includes(0x0a)
        ? { status: 414, message: 'Request URL is too long' }
        : { status: 431, message: 'Request headers are too large' };
    }
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'Request chunk extensions are too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'Request was not received in time' };
    case 'HPE_INVALID_METHOD':
    case 'HPE_INVALID_URL':
    case 'HPE_INVALID_VERSION':
    case 'HPE_INVALID_CONSTANT':
      return { status: 400, message: 'Malformed request line' };
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return { status: 400, message: 'Conflicting or invalid Content-Length and Transfer-Encoding headers' };
    case 'HPE_INVALID_HEADER_TOKEN':
      return { status: 400, message: 'Malformed request header' };
    case 'HPE_INVALID_CHUNK_SIZE':
      return { status: 400, message: 'Malformed chunked request body' };
    default:
      return { status: 400, message: 'Malformed HTTP request' };
  }
}

/**
 * `clientError` listener of the HTTP server: Node's own answers to requests it cannot parse have an
 * empty body; these carry the JSON envelope like every other error, then close the connection (the
 * parser cannot find the next request after an error). When an earlier request of the same connection
 * (pipelining) is still being answered, that answer is let finish first, so the two never interleave;
 * an error in the body of the request being answered is that request's answer.
 */
export function answerClientErrors(logger: Logger) {
  return (error: ClientError, socket: Duplex): void => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const { status, message } = clientErrorAnswer(error);
    logger.info({ code: error.code, statusCode: status }, 'malformed request refused by the HTTP parser');
    const answer = (): void => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const body = JSON.stringify(envelope(status, message));
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
          'Content-Type: application/json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          'Cache-Control: no-store\r\n' +
          'Connection: close\r\n' +
          `\r\n${body}`,
        () => socket.destroy(),
      );
    };
    // Node's own marker of the response in flight on this connection (what its default handler checks).
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!inFlight || inFlight.writableFinished) {
      answer();
      return;
    }
    if (!inFlight.req.complete) {
      // The error is in the body of the request being answered: this answer is its answer, unless one
      // has already started (then the connection can only be cut, as Node does).
      if (inFlight.headersSent) socket.destroy();
      else answer();
      return;
    }
    inFlight.once('finish', answer);
    inFlight.once('close', () => {
      if (!inFlight.writableFinished) socket.destroy();
    });
  };
}
