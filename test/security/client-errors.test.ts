import { startTestServer, type TestServer } from '../helpers/server.js';
import { envelopeOf, parseRawAnswer, rawSocket } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** Sends raw bytes and expects one JSON envelope answer, then the connection closed by the server. */
async function expectRefused(bytes: string, status: number, message: string) {
  const answer = parseRawAnswer(await rawSocket(server, bytes));
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(answer.headers.connection).toBe('close');
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  expect(JSON.parse(answer.body)).toEqual(envelopeOf(status, message));
}

describe('requests Node refuses before Express carry the envelope', () => {
  it('answers 414 for a URL longer than the header limit', async () => {
    await expectRefused(
      `GET /v1/customers?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      414,
      'Request URL is too long',
    );
  });

  it('answers 431 for headers over the limit, in one header or many', async () => {
    await expectRefused(
      `GET /v1/customers HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'Request headers are too large',
    );
    await expectRefused(
      `GET /v1/customers HTTP/1.1\r\nHost: x\r\n${'X-Many: b\r\n'.repeat(3000)}\r\n`,
      431,
      'Request headers are too large',
    );
  });

  it.each([
    ['an unknown method', 'BREW /v1/customers HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['no version', 'GARBAGE\r\n\r\n'],
    ['a bad version', 'GET /v1/customers HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['a control character in the URL', 'GET /v1/\x01customers HTTP/1.1\r\nHost: x\r\n\r\n'],
  ])('answers 400 for a malformed request line (%s)', async (_what, bytes) => {
    await expectRefused(bytes, 400, 'Malformed request line');
  });

  it.each([
    [
      'Content-Length with Transfer-Encoding',
      'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    ['two different Content-Lengths', 'Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'],
    ['a non-numeric Content-Length', 'Content-Length: 5x\r\n\r\nhello'],
    ['a Transfer-Encoding that does not end in chunked', 'Transfer-Encoding: gzip\r\n\r\n'],
  ])('answers 400 for %s', async (_what, rest) => {
    await expectRefused(
      `POST /v1/customers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${rest}`,
      400,
      'Conflicting or invalid Content-Length and Transfer-Encoding headers',
    );
  });

  it('answers 400 for a malformed header and for a NUL in a header value', async () => {
    await expectRefused(
      'GET /v1/customers HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
      400,
      'Malformed request header',
    );
    await expectRefused(
      'GET /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\x00b\r\n\r\n',
      400,
      'Malformed request header',
    );
  });

  it('answers 400 for a malformed chunked body', async () => {
    await expectRefused(
      'POST /v1/customers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n',
      400,
      'Malformed chunked request body',
    );
  });

  it.each([
    ['no Host header', 'GET /v1/customers HTTP/1.1\r\nConnection: close\r\n\r\n', 'Host header is required'],
    [
      'two Host headers',
      'GET /v1/customers HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n',
      'Host header must be sent once',
    ],
  ])('answers 400 with the envelope for %s (RFC 9112 §3.2)', async (_what, bytes, message) => {
    const answer = parseRawAnswer(await rawSocket(server, bytes));
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(answer.body)).toEqual(envelopeOf(400, message));
  });

  it('takes an HTTP/1.0 request without Host, which that version allows', async () => {
    // Past the Host check: refused only for want of a credential.
    const answer = parseRawAnswer(await rawSocket(server, 'GET /v1/customers HTTP/1.0\r\n\r\n'));
    expect(answer.status).toBe(401);
  });

  it('keeps serving afterwards, and a well-formed request on a raw socket is answered normally', async () => {
    const answer = parseRawAnswer(
      await rawSocket(server, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ status: 'ok' });
  });

  it('lets an answer under way on a pipelined connection finish before refusing what follows it', async () => {
    const raw = await rawSocket(server, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n');
    const first = parseRawAnswer(raw);
    expect(first.status).toBe(200);
    expect(first.body.startsWith('{"status":"ok"}')).toBe(true);
    const second = parseRawAnswer(raw.slice(raw.indexOf('HTTP/1.1', 1)));
    expect(second.status).toBe(400);
    expect(JSON.parse(second.body)).toEqual(envelopeOf(400, 'Malformed request line'));
  });
});
