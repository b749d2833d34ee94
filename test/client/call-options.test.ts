import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { type Customer, Tollgate, TollgateAuth, TollgateError, USER_AGENT, VERSION } from '@tollgate/client';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * What a call of @tollgate/client may be told: `timeout` and `signal` (per client and per call), the
 * bound a call's time puts on waiting for `Retry-After`, auto-pagination of `list()` against a real
 * Tollgate, and the User-Agent it sends.
 */

/** A server that accepts connections and never answers, as an overloaded upstream would. */
async function startSilentServer() {
  const sockets: Socket[] = [];
  const server: Server = createTcpServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url, sockets, close };
}

async function failure(call: Promise<unknown>): Promise<TollgateError> {
  const error = await call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TollgateError);
  return error as TollgateError;
}

let silent: Awaited<ReturnType<typeof startSilentServer>>;
beforeAll(async () => {
  silent = await startSilentServer();
});
afterAll(async () => {
  await silent.close();
});

describe('timeout and signal', () => {
  it('ends a call Tollgate does not answer after the client timeout, closing the connection', async () => {
    const client = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: silent.url, timeout: 300 });
    const before = silent.sockets.length;
    const error = await failure(client.customers.retrieve('cus_1'));
    expect({ statusCode: error.statusCode, error: error.error, message: error.message }).toEqual({
      statusCode: 0,
      error: 'Timeout',
      message: 'Tollgate did not answer within 300 ms',
    });
    expect(silent.sockets.length).toBe(before + 1);
    await eventually(() => (silent.sockets.at(-1)!.destroyed ? true : undefined), {
      what: 'the abandoned connection to close',
    });
  });

  it("lets one call's timeout override the client's", async () => {
    const client = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: silent.url, timeout: 600_000 });
    const error = await failure(client.customers.list({}, { timeout: 200 }));
    expect([error.error, error.message]).toEqual(['Timeout', 'Tollgate did not answer within 200 ms']);
  });

  it('ends a call when its signal aborts, with the reason as cause', async () => {
    const client = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: silent.url, timeout: 600_000 });
    const controller = new AbortController();
    const before = silent.sockets.length;
    const call = failure(client.customers.create({ email: 'a@example.com' }, { signal: controller.signal }));
    await eventually(() => (silent.sockets.length > before ? true : undefined), {
      what: 'the request to reach the server',
    });
    controller.abort(new Error('the user left'));
    const error = await call;
    expect({ statusCode: error.statusCode, error: error.error, message: error.message }).toEqual({
      statusCode: 0,
      error: 'Aborted',
      message: 'The call was aborted',
    });
    expect((error.cause as Error).message).toBe('the user left');
  });

  it('ends every call of a client whose own signal aborts, and sends none once it has', async () => {
    const controller = new AbortController();
    const client = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: silent.url, signal: controller.signal });
    const before = silent.sockets.length;
    const calls = [
      failure(client.customers.retrieve('cus_1')),
      failure(client.entitlements.get({ customerId: 'c' })),
    ];
    await eventually(() => (silent.sockets.length >= before + 2 ? true : undefined));
    controller.abort();
    for (const error of await Promise.all(calls)) expect(error.error).toBe('Aborted');
    const afterwards = silent.sockets.length;
    expect((await failure(client.customers.retrieve('cus_2'))).error).toBe('Aborted');
    expect(silent.sockets.length).toBe(afterwards);
  });

  it('gives the login client the same options, per client and per call', async () => {
    const auth = new TollgateAuth({ appId: 'app_1', baseUrl: silent.url, timeout: 600_000 });
    const timedOut = await failure(auth.verify('tg_ml_x', { timeout: 200 }));
    expect([timedOut.error, timedOut.message]).toEqual(['Timeout', 'Tollgate did not answer within 200 ms']);
    const controller = new AbortController();
    controller.abort();
    const aborted = await failure(
      auth.sendMagicLink('a@example.com', { redirectUrl: 'http://localhost/cb', signal: controller.signal }),
    );
    expect(aborted.error).toBe('Aborted');
  });

  it('refuses a timeout that is not a positive number before sending anything', async () => {
    expect(() => new Tollgate({ apiKey: 'tg_sk_x', baseUrl: silent.url, timeout: 0 })).toThrow(
      'timeout must be a number of milliseconds greater than 0',
    );
    const client = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: silent.url });
    const error = await failure(client.customers.retrieve('cus_1', { timeout: -1 }));
    expect([error.statusCode, error.error]).toEqual([0, 'Configuration Error']);
  });
});

describe('waiting for Retry-After within the call time', () => {
  const BUDGET = 3;
  let limited: TestServer;
  let keys: string[];
  beforeAll(async () => {
    // Three requests per minute per credential: the fourth answers 429 with a Retry-After of up to 60 s.
    limited = await startTestServer({ env: { RATE_LIMIT_API_KEY: String(BUDGET) } });
    keys = [(await limited.createApp()).apiKey, (await limited.createApp()).apiKey];
  });

  async function exhaust(client: Tollgate): Promise<void> {
    for (let i = 0; i < BUDGET; i++) await client.customers.list();
  }
  afterAll(async () => {
    await limited?.close();
  });

  it('answers the 429 at once when Retry-After is longer than what is left of the timeout', async () => {
    const sleeps: number[] = [];
    const client = new Tollgate({
      apiKey: keys[0]!,
      baseUrl: limited.url,
      timeout: 5_000,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    await exhaust(client);
    const error = await failure(client.customers.list());
    expect([error.statusCode, error.error]).toEqual([429, 'Too Many Requests']);
    expect(error.retryAfter).toBeGreaterThan(5);
    expect(sleeps).toEqual([]);
  });

  it('stops waiting when the signal aborts during the wait', async () => {
    const controller = new AbortController();
    const sleeps: number[] = [];
    const client = new Tollgate({
      apiKey: keys[1]!,
      baseUrl: limited.url,
      timeout: 600_000,
      // A wait that never ends by itself: only the abort can end the call.
      sleep: (ms) => {
        sleeps.push(ms);
        controller.abort();
        return new Promise<void>(() => undefined);
      },
    });
    await exhaust(client);
    const error = await failure(client.customers.list({}, { signal: controller.signal }));
    expect(error.error).toBe('Aborted');
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThan(0);
  });
});

describe('list() pages', () => {
  let server: TestServer;
  let client: Tollgate;
  let created: Customer[];
  let requests: string[];
  const marker = `paged${Date.now().toString(36)}`;

  beforeAll(async () => {
    server = await startTestServer({ env: { RATE_LIMIT_API_KEY: '100000' } });
    const { apiKey } = await server.createApp();
    requests = [];
    client = new Tollgate({
      apiKey,
      baseUrl: server.url,
      fetch: (input, init) => {
        const url = new URL(String(input));
        if (init?.method === 'GET') requests.push(`${url.pathname}${url.search}`);
        return fetch(input, init);
      },
    });
    created = [];
    for (let i = 0; i < 250; i++) {
      created.push(await client.customers.create({ email: `${marker}-${i}@example.com` }));
    }
    // Another customer the filter must leave out.
    await client.customers.create({ email: 'someone-else@example.com' });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it('awaits to one page, as before: data and pagination', async () => {
    requests.length = 0;
    const page = await client.customers.list({ email: marker, limit: 100 });
    expect(page.data).toHaveLength(100);
    expect(page.pagination).toEqual({ total: 250, limit: 100, offset: 0 });
    expect(requests).toEqual([`/v1/customers?email=${marker}&limit=100`]);
  });

  it('iterates over all 250 customers, each once, one request per page', async () => {
    requests.length = 0;
    const seen: string[] = [];
    for await (const customer of client.customers.list({ email: marker, limit: 100 })) seen.push(customer.id);
    expect(seen).toHaveLength(250);
    expect(new Set(seen)).toEqual(new Set(created.map((c) => c.id)));
    expect(requests).toEqual([
      `/v1/customers?email=${marker}&limit=100`,
      `/v1/customers?email=${marker}&limit=100&offset=100`,
      `/v1/customers?email=${marker}&limit=100&offset=200`,
    ]);
  });

  it('iterates from the offset asked for, and stops early when the loop breaks', async () => {
    const rest = await client.customers.list({ email: marker, limit: 40, offset: 200 }).toArray();
    expect(rest).toHaveLength(50);
    requests.length = 0;
    let count = 0;
    for await (const _ of client.customers.list({ email: marker, limit: 10 })) {
      if (++count === 15) break;
    }
    expect(requests).toHaveLength(2);
  });

  it('fails the iteration with the TollgateError of the page that failed', async () => {
    const error = await failure(client.customers.list({ email: marker, limit: 1000 }).toArray());
    expect([error.statusCode, error.error]).toEqual([400, 'Bad Request']);
  });
});

describe('User-Agent', () => {
  it('names the client and its version, the one of the package', async () => {
    const received: IncomingHttpHeaders[] = [];
    const echo = createHttpServer((req, res) => {
      received.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"planName":null,"features":{}}');
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      const client = new Tollgate({
        apiKey: 'tg_sk_x',
        baseUrl: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`,
      });
      await client.entitlements.get({ customerId: 'cus_1' });
    } finally {
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    }
    const manifest = JSON.parse(readFileSync(path.join('packages', 'client', 'package.json'), 'utf8'));
    expect(VERSION).toBe(manifest.version);
    expect(USER_AGENT).toBe(`tollgate-client/${manifest.version}`);
    expect(received.map((h) => h['user-agent'])).toEqual([`tollgate-client/${manifest.version}`]);
  });
});
