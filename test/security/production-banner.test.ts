import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createScratchDatabase, dropDatabase } from '../../src/infra/database-admin.js';
import { eventually } from '../helpers/eventually.js';
import { startCli } from '../helpers/process.js';

/**
 * The start-up banner and every log line end up in container logs. A production start (the built CLI,
 * as deployed) shows no secret anywhere in its output and advertises GraphiQL only when it serves it; a
 * development start still shows what a newcomer needs: the admin token, the demo app's key, the tools.
 */

const secret = (prefix: string) => `${prefix}${randomBytes(16).toString('hex')}`;

type Cli = ReturnType<typeof startCli>;
const started: Cli[] = [];
const dataDirs: string[] = [];

afterEach(async () => {
  for (const proc of started.splice(0)) {
    if (proc.child.exitCode === null) {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  }
  for (const dir of dataDirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-banner-'));
  dataDirs.push(dir);
  return dir;
}

/** Starts `tollgate serve`; resolves with the process and its base URL once the banner is out. */
async function serve(env: Record<string, string | undefined>): Promise<{ proc: Cli; base: string }> {
  const proc = startCli(['serve'], { PORT: '0', STRIPE_EMULATOR_PORT: '0', ...env });
  started.push(proc);
  const base = await eventually(
    () => {
      if (proc.child.exitCode !== null) throw new Error(`serve exited: ${proc.output.stderr}`);
      return /REST API\s+(http:\/\/\S+)\/v1/.exec(proc.output.stdout)?.[1];
    },
    { what: 'the start-up banner', timeoutMs: 30_000 },
  );
  // The banner is written whole; wait for its closing blank line before reading it.
  await eventually(() => (/\n\n$/.test(proc.output.stdout) ? true : undefined));
  return { proc, base };
}

/** Stops the process as an orchestrator would and returns everything it wrote. */
async function stop(proc: Cli): Promise<string> {
  proc.child.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  return proc.output.stdout + proc.output.stderr;
}

function productionEnv(overrides: Record<string, string> = {}) {
  const secrets = {
    ADMIN_TOKEN: secret('prod-admin-'),
    STRIPE_SECRET_KEY: secret('sk_live_'),
    STRIPE_WEBHOOK_SECRET: secret('whsec_'),
    smtpPassword: secret('smtp-'),
    databasePassword: secret('pg-'),
  };
  // A password of the test database's URL is a secret too; a server trusting loopback ignores an added one.
  const databaseUrl = new URL(process.env.TEST_DATABASE_URL!);
  if (databaseUrl.password) secrets.databasePassword = decodeURIComponent(databaseUrl.password);
  else databaseUrl.password = secrets.databasePassword;
  const env = {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl.toString(),
    ADMIN_TOKEN: secrets.ADMIN_TOKEN,
    PUBLIC_BASE_URL: 'https://billing.example.com',
    STRIPE_SECRET_KEY: secrets.STRIPE_SECRET_KEY,
    STRIPE_WEBHOOK_SECRET: secrets.STRIPE_WEBHOOK_SECRET,
    // Nothing is sent at start-up: Stripe and SMTP are only reached when a request needs them.
    STRIPE_API_BASE: 'http://127.0.0.1:9',
    SMTP_URL: `smtp://tollgate:${secrets.smtpPassword}@127.0.0.1:2525`,
    MAIL_FROM: 'Billing <billing@example.com>',
    WEBHOOK_SECRET_KEY: 'dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE=',
    // Behind a TLS-terminating proxy: requests below say so with X-Forwarded-Proto, as the proxy would.
    TRUST_PROXY: 'loopback',
    // The most talkative level a production operator might set: every line it writes is checked.
    LOG_LEVEL: 'trace',
    ...overrides,
  };
  return { env, secrets: Object.values(secrets) };
}

/** Requests that carry the secrets in: an admin query, a forged Stripe notification. */
async function exercise(base: string, adminToken: string): Promise<void> {
  const apps = await request(base)
    .post('/graphql')
    .set('x-forwarded-proto', 'https')
    .set('authorization', `Bearer ${adminToken}`)
    .send({ query: '{ apps { id } }' });
  expect(apps.status).toBe(200);
  expect(Array.isArray(apps.body.data.apps)).toBe(true);
  const forged = await request(base)
    .post('/v1/webhooks/stripe')
    .set('x-forwarded-proto', 'https')
    .set('content-type', 'application/json')
    .set('stripe-signature', `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`)
    .send('{"id":"evt_forged","type":"checkout.session.completed"}');
  expect(forged.status).toBe(400);
}

describe('production start', () => {
  it('writes no secret to stdout or stderr, and advertises no GraphiQL when it is off', async () => {
    const { env, secrets } = productionEnv({ DATA_DIR: await dataDir() });
    const { proc, base } = await serve(env);
    const banner = proc.output.stdout;
    expect(banner).toContain(`REST API     ${base}/v1\n`);
    expect(banner).toContain(`GraphQL      ${base}/graphql\n`);
    expect(banner).toContain(`Dashboard    ${base}/dashboard\n`);
    expect(banner).toContain('Admin token  the value of ADMIN_TOKEN\n');
    expect(banner).not.toContain('GraphiQL');
    expect(banner).not.toContain('Dev mailbox');
    expect(banner).not.toContain('API key');
    expect(banner).not.toContain('API docs');

    // Advertised as absent because it is absent: a browser gets no GraphiQL page.
    const page = await request(base)
      .get('/graphql')
      .set('x-forwarded-proto', 'https')
      .set('accept', 'text/html');
    expect(page.headers['content-type']).not.toMatch(/html/);
    expect(page.text).not.toContain('GraphiQL');

    await exercise(base, env.ADMIN_TOKEN);
    const output = await stop(proc);
    expect(output).toContain('shutting down');
    for (const value of secrets) expect(output).not.toContain(value);
  });

  it('advertises GraphiQL when GRAPHIQL=true serves it, still without a secret', async () => {
    const { env, secrets } = productionEnv({ DATA_DIR: await dataDir(), GRAPHIQL: 'true' });
    const { proc, base } = await serve(env);
    expect(proc.output.stdout).toContain(`GraphiQL     ${base}/graphql\n`);
    const page = await request(base)
      .get('/graphql')
      .set('x-forwarded-proto', 'https')
      .set('accept', 'text/html');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Loading GraphiQL');

    await exercise(base, env.ADMIN_TOKEN);
    const output = await stop(proc);
    for (const value of secrets) expect(output).not.toContain(value);
  });
});

describe('development start', () => {
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL ?? process.env.DATABASE_URL ?? '';
  const name = `tollgate_banner_${process.pid}_${Date.now()}`;
  let databaseUrl: string;
  beforeAll(async () => {
    // An empty database of its own, so the first start seeds the demo app and shows its key.
    databaseUrl = await createScratchDatabase(serverUrl, name);
  });
  afterAll(async () => {
    await dropDatabase(serverUrl, name);
  });

  it('shows the generated admin token, the demo key and the tools, each of which works', async () => {
    const dir = await dataDir();
    const { proc, base } = await serve({ DATABASE_URL: databaseUrl, DATA_DIR: dir, LOG_LEVEL: 'warn' });
    const banner = proc.output.stdout;

    const adminToken = /Admin token {2}(tg_admin_\S+)\n/.exec(banner)?.[1];
    expect(adminToken).toBe((await readFile(path.join(dir, 'admin-token'), 'utf8')).trim());
    const apps = await request(base)
      .post('/graphql')
      .set('authorization', `Bearer ${adminToken}`)
      .send({ query: '{ apps { id name } }' });
    expect(apps.status).toBe(200);

    const appId = /App id {7}(app_\S+)\n/.exec(banner)?.[1];
    const apiKey = /API key {6}(tg_sk_\S+)\n/.exec(banner)?.[1];
    expect(apps.body.data.apps).toEqual([{ id: appId, name: 'Demo app' }]);
    const customers = await request(base).get('/v1/customers').set('authorization', `Bearer ${apiKey}`);
    expect(customers.status).toBe(200);

    expect(banner).toContain(`GraphiQL     ${base}/graphql\n`);
    expect((await request(base).get('/graphql').set('accept', 'text/html')).text).toContain(
      'Loading GraphiQL',
    );
    expect(banner).toContain(`API docs     ${base}/docs\n`);
    expect((await request(base).get('/docs')).text).toContain('Tollgate API reference');
    expect(banner).toContain(`Dev mailbox  ${base}/dev/mailbox\n`);
    expect((await request(base).get('/dev/mailbox')).status).toBe(200);
    expect(banner).toMatch(
      /Stripe {7}emulator at http:\/\/127\.0\.0\.1:\d+ \(test card 4242 4242 4242 4242\)\n/,
    );
    await stop(proc);
  });
});
