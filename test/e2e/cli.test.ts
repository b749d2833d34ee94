import { connect } from 'node:net';
import request from 'supertest';
import { staleReason } from '../../bin/build.js';
import { eventually } from '../helpers/eventually.js';
import { BIN, runCli, startCli } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const env = () => ({ DATABASE_URL: process.env.TEST_DATABASE_URL, LOG_LEVEL: 'warn' });

describe('tollgate CLI', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('creates an app and prints its id and a working API key as JSON', async () => {
    const result = await runCli(
      ['apps', 'create', '--name', 'CLI app', '--callback-url', 'https://app.example.com/*'],
      env(),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).toEqual({
      appId: expect.stringMatching(/^app_/),
      apiKey: expect.stringMatching(/^tg_sk_/),
    });
    const res = await server.http.get('/v1/no-route').set('authorization', `Bearer ${printed.apiKey}`);
    expect(res.status).toBe(404); // the key authenticated; the route does not exist

    const app = await server.graphql(
      'query($id: ID!) { app(id: $id) { name settings { allowedCallbackUrls } } }',
      { id: printed.appId },
      server.adminToken,
    );
    expect(app.body.data.app).toEqual({
      name: 'CLI app',
      settings: { allowedCallbackUrls: 'https://app.example.com/*' },
    });
  });

  it('creates another key for an app', async () => {
    const { appId } = await server.createApp();
    const result = await runCli(['keys', 'create', '--app', appId], env());
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      keyId: expect.stringMatching(/^key_/),
      apiKey: expect.stringMatching(/^tg_sk_/),
    });
  });

  it('names a key when asked', async () => {
    const { appId } = await server.createApp();
    const result = await runCli(['keys', 'create', '--app', appId, '--name', 'nightly export'], env());
    expect(result.code).toBe(0);
    const { keyId } = JSON.parse(result.stdout);
    const keys = await server.graphql(
      'query($id: ID!) { app(id: $id) { apiKeys { id name } } }',
      { id: appId },
      server.adminToken,
    );
    expect(keys.body.data.app.apiKeys).toContainEqual({ id: keyId, name: 'nightly export' });
  });

  it('reports invalid input without a stack trace and exits non-zero', async () => {
    const result = await runCli(['apps', 'create', '--name', ''], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('tollgate: name: must not be empty\n');
  });

  it('runs from the built output through its bin, printing only the JSON on stdout', async () => {
    // `npm test` has just built; were dist/ stale, the bin would rebuild it under the other tests' feet.
    expect(staleReason()).toBeUndefined();
    const result = await runCli(['apps', 'create', '--name', 'Bin app'], env(), { entry: BIN });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      appId: expect.stringMatching(/^app_/),
      apiKey: expect.stringMatching(/^tg_sk_/),
    });
  });

  it('prints usage on a bare call, starting nothing, and exits 2', async () => {
    const result = await runCli([], env(), { entry: BIN });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^Usage: tollgate <command> \[options\]\n/);
    expect(result.stderr).toContain('  serve ');
    expect(result.stderr).not.toContain('Tollgate is running');
  });

  it('prints usage on stdout for help and exits 0', async () => {
    const result = await runCli(['help'], env(), { entry: BIN });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: tollgate <command> \[options\]\n/);
    expect(result.stderr).toBe('');
  });

  it("refuses an unknown option with the command's usage and exit code 2", async () => {
    const result = await runCli(['keys', 'create', '--frobnicate'], env());
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^tollgate: Unknown option '--frobnicate'\n\nUsage: tollgate keys create /);
  });

  it('refuses a missing required option with the usage and exit code 2, before touching the database', async () => {
    const result = await runCli(['keys', 'create'], {
      ...env(),
      DATABASE_URL: 'postgres://127.0.0.1:9/none',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^tollgate: Required option '--app <appId>' not specified\n\nUsage: tollgate keys create /,
    );
  });

  it('prints usage for an unknown command and exits 2', async () => {
    const result = await runCli(['frobnicate'], env());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown command: frobnicate');
    expect(result.stderr).toContain('Usage: tollgate <command>');
  });
});

describe('production mode', () => {
  it('refuses to start without the required variables, naming each of them', async () => {
    const result = await runCli(['serve'], { NODE_ENV: 'production' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'tollgate: Invalid configuration: missing required variables for NODE_ENV=production: DATABASE_URL, ADMIN_TOKEN, PUBLIC_BASE_URL, STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, SMTP_URL, MAIL_FROM, WEBHOOK_SECRET_KEY; NODE_ENV=production requires HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE to terminate TLS here, or TRUST_PROXY when a proxy in front terminates it\n',
    );
  });
});

describe('serve', () => {
  it('prints the banner, finishes an in-flight request on SIGTERM, then exits 0', async () => {
    const proc = startCli(['serve'], {
      ...env(),
      LOG_LEVEL: 'info',
      PORT: '0',
      ADMIN_TOKEN: 'cli-test-admin-token-0123456789',
      DATA_DIR: `/tmp/tollgate-cli-test-${process.pid}`,
      STRIPE_EMULATOR_PORT: '0',
    });
    const base = await eventually(() => /REST API\s+(http:\/\/\S+)\/v1/.exec(proc.output.stdout)?.[1], {
      what: 'the server to print its REST API address',
      timeoutMs: 20_000,
    });
    expect(proc.output.stdout).toMatch(/GraphiQL\s+http:\/\/127\.0\.0\.1:\d+\/graphql/);
    expect(proc.output.stdout).toContain('Admin token  cli-test-admin-token-0123456789');
    expect((await request(base).get('/readyz')).status).toBe(200);

    // Start a request whose body is still arriving. `Expect: 100-continue` makes the server say when it
    // has read the headers, so the request is known to be in flight before the signal is sent.
    const { port } = new URL(base);
    const body = JSON.stringify({ query: '{ apps { id } }' });
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let response = '';
    socket.on('data', (d) => {
      response += d;
    });
    socket.write(
      `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer cli-test-admin-token-0123456789\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await eventually(() => (response.startsWith('HTTP/1.1 100 Continue') ? true : undefined), {
      what: '100 Continue',
      timeoutMs: 20_000,
    });
    socket.write(body.slice(0, 5));
    proc.child.kill('SIGTERM');
    await eventually(() => (proc.output.stdout.includes('shutting down') ? true : undefined), {
      what: 'the server to say it is shutting down',
      timeoutMs: 20_000,
    });
    socket.write(body.slice(5));

    expect(await proc.exited).toBe(0);
    // Piped output is for programs: the log lines around the banner are JSON.
    expect(proc.output.stdout).toMatch(/^\{.*"msg":"shutting down: finishing in-flight requests"/m);
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
    expect(response).toContain('{"data":{"apps":');
    socket.destroy();
  });
});

describe('serve with LOG_FORMAT=pretty', () => {
  it('logs lines for reading instead of JSON, even when piped', async () => {
    const proc = startCli(['serve'], {
      ...env(),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'pretty',
      PORT: '0',
      ADMIN_TOKEN: 'cli-test-admin-token-0123456789',
      DATA_DIR: `/tmp/tollgate-cli-pretty-${process.pid}`,
      STRIPE_EMULATOR_PORT: '0',
    });
    await eventually(() => (proc.output.stdout.includes('Tollgate is running') ? true : undefined), {
      what: 'the banner',
      timeoutMs: 20_000,
    });
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    expect(proc.output.stdout).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: shutting down: finishing in-flight requests$/m,
    );
    expect(proc.output.stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: stopped$/m);
    expect(proc.output.stdout).not.toMatch(/^\{/m);
  });
});
