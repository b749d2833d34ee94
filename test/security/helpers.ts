import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import type { TestServer } from '../helpers/server.js';

/** The error envelope of the REST interface for `status` with `message`. */
export function envelopeOf(statusCode: number, message: string) {
  return { statusCode, message, error: http.STATUS_CODES[statusCode] };
}

/** Customers of an app, read from the database (what a refused request must not have written). */
export async function customerCount(server: TestServer, appId: string): Promise<number> {
  const rows = await server.deps.orm.em
    .getConnection()
    .execute<{ n: number }[]>('select count(*)::int as n from customer where app_id = ?', [appId]);
  return rows[0]!.n;
}

export interface RawAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  readonly json: () => any;
}

/**
 * One request through Node's HTTP client, which (unlike supertest) sends repeated headers as given,
 * percent-escapes nothing and takes any body bytes.
 */
export function rawRequest(
  server: TestServer,
  options: {
    method: string;
    path: string;
    headers?: Record<string, string | string[]>;
    body?: Buffer | string;
  },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        // Sent as written: no URL parsing, so no dot-segment removal or re-encoding.
        path: options.path,
        method: options.method,
        // A repeated header is an array value: Node writes one line per item.
        headers: options.headers as http.OutgoingHttpHeaders,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, headers: res.headers, text, json: () => JSON.parse(text) });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Writes raw bytes on a new connection and reads until the server closes it (or `ms` pass). */
export function rawSocket(server: TestServer, bytes: string | Buffer, ms = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${ms} ms`));
    }, ms);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

/** Splits a raw HTTP/1.1 answer into status, headers (lower-cased names) and body. */
export function parseRawAnswer(raw: string): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const end = raw.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: raw.slice(end + 4) };
}

/** Collects every log line the server writes. */
export function logCollector(): { stream: Writable; text: () => string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return { stream, text: () => lines.join('') };
}
