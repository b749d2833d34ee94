import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * @tollgate/client as a user gets it: `npm pack` of the built package holds only its build, README and
 * manifest; installed from the tarball into a scratch project, it type-checks and calls a real Tollgate.
 */
const run = promisify(execFile);
const ROOT = process.cwd();
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

/** npm itself: the one running `npm test`, else the one beside this node. */
function npm(args: string[], cwd: string) {
  const cli = process.env.npm_execpath;
  return cli?.endsWith('.js')
    ? run(process.execPath, [cli, ...args], { cwd })
    : run(path.join(path.dirname(process.execPath), 'npm'), args, { cwd });
}

let server: TestServer;
let dir: string;
let tarball: string;
let files: string[];

beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-client-pack-'));
  const { stdout } = await npm(
    ['pack', '--json', '--pack-destination', dir, '--no-audit', '--no-fund'],
    path.join(ROOT, 'packages/client'),
  );
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(dir, packed!.filename);
  files = packed!.files.map((f) => f.path).sort();
  const project = path.join(dir, 'app');
  await mkdir(project);
  await writeFile(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }),
  );
  await npm(
    ['install', tarball, '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock'],
    project,
  );
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the packed @tollgate/client', () => {
  it('contains only dist/, README.md and package.json', () => {
    expect(files).toContain('package.json');
    expect(files).toContain('README.md');
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files.filter((f) => f !== 'package.json' && f !== 'README.md' && !f.startsWith('dist/'))).toEqual(
      [],
    );
  });

  it('is imported from the tarball by a scratch project and calls Tollgate', async () => {
    const { apiKey, appId } = await server.createApp();
    const project = path.join(dir, 'app');
    await writeFile(
      path.join(project, 'main.js'),
      `import { Tollgate, TollgateAuth, TollgateError } from '@tollgate/client';
const tollgate = new Tollgate({ apiKey: process.env.KEY, baseUrl: process.env.BASE });
const customer = await tollgate.customers.create({ email: 'packed@example.com', metadata: { from: 'tarball' } });
const auth = new TollgateAuth({ appId: process.env.APP, baseUrl: process.env.BASE, production: true });
let refused;
try { await auth.sendMagicLink('packed@example.com'); } catch (e) { refused = e instanceof TollgateError && e.message; }
console.log(JSON.stringify({ customer, refused }));
`,
    );
    const { stdout } = await run(process.execPath, ['main.js'], {
      cwd: project,
      env: { PATH: process.env.PATH, KEY: apiKey, BASE: server.url, APP: appId },
    });
    const out = JSON.parse(stdout);
    expect(out.customer).toMatchObject({ email: 'packed@example.com', metadata: { from: 'tarball' } });
    expect(out.refused).toBe(
      'redirectUrl is required in production (devCallbackUrl is used only in development)',
    );
    const stored = await server.http
      .get(`/v1/customers/${out.customer.id}`)
      .set('authorization', `Bearer ${apiKey}`);
    expect(stored.status).toBe(200);
  });

  it("type-checks a TypeScript program against the tarball's declarations", async () => {
    const project = path.join(dir, 'app');
    await writeFile(
      path.join(project, 'check.ts'),
      `import {
  Tollgate,
  verifyWebhook,
  type Customer,
  type CustomerList,
  type Entitlements,
  type PagePromise,
  type RequestOptions,
  type Subscription,
  type TollgateError,
  type WebhookEvent,
} from '@tollgate/client';
const tollgate = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: 'http://127.0.0.1:4000', timeout: 10_000 });
export async function make(): Promise<Customer> {
  return tollgate.customers.create({ email: 'a@example.com', metadata: { seats: 3, tags: ['b2b'] } });
}
export function describe(error: TollgateError): string {
  return \`\${error.statusCode} \${error.error} \${error.rateLimit?.remaining ?? '-'}\`;
}
// Each method's answer is a named type, and every call takes its own options.
const options: RequestOptions = { timeout: 2_000, signal: AbortSignal.timeout(5_000), maxRetries: 0 };
export const current: Promise<Subscription> = tollgate.subscriptions.current({ customerId: 'c' }, options);
export const rights: Promise<Entitlements> = tollgate.entitlements.get({ organizationId: 'o' });
// list(): one page when awaited, every customer when iterated.
const pages: PagePromise<Customer, CustomerList> = tollgate.customers.list({ email: 'a' });
export async function emails(): Promise<string[]> {
  const first: CustomerList = await pages;
  const all: string[] = first.data.map((c) => c.email);
  for await (const customer of tollgate.customers.list({ limit: 100 }, { timeout: 30_000 })) all.push(customer.email);
  return all;
}
// verifyWebhook: a union told apart by type, each with its own data.
export async function handle(body: string, headers: Headers, secret: string): Promise<string> {
  const event: WebhookEvent = await verifyWebhook(body, headers, secret);
  switch (event.type) {
    case 'customer.created':
    case 'customer.updated':
      return event.data.email;
    case 'customer.deleted':
      return event.data.id;
    case 'subscription.created':
    case 'subscription.updated':
    case 'subscription.canceled':
      return event.data.status;
    case 'entitlements.updated':
      return 'customerId' in event.data ? event.data.customerId : event.data.organizationId;
    case 'plan.updated':
      return \`\${event.data.id} \${event.data.trialDays}\`;
    case 'usage.limit_reached':
      return \`\${event.data.feature} \${event.data.remaining}\`;
    case 'credit_grant.created':
    case 'credit_grant.voided':
      return \`\${event.data.id} \${event.data.remaining}\`;
    case 'organization.member_added':
    case 'organization.member_removed':
      return \`\${event.data.organizationId} \${event.data.customerId} \${event.data.role}\`;
    case 'organization.invitation_created':
      return \`\${event.data.organizationId} \${event.data.status}\`;
    case 'webhook.test':
      return \`\${event.data.endpointId} \${event.data.message}\`;
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}
`,
    );
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022', 'dom', 'dom.asynciterable'],
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    const result = await run(process.execPath, [TSC, '-p', path.join(project, 'tsconfig.json')]).then(
      () => '',
      (error: { stdout?: string }) => String(error.stdout),
    );
    expect(result).toBe('');
  });

  it('names the types in what the compiler says about a misuse', async () => {
    const project = path.join(dir, 'app');
    await writeFile(
      path.join(project, 'misuse.ts'),
      `import { Tollgate, type Customer, type WebhookEvent } from '@tollgate/client';
const tollgate = new Tollgate({ apiKey: 'tg_sk_x', baseUrl: 'http://127.0.0.1:4000' });
export async function wrong(event: WebhookEvent): Promise<string> {
  const customer: Customer = await tollgate.entitlements.get({ customerId: 'c' });
  if (event.type === 'customer.deleted') return event.data.email;
  return customer.id;
}
`,
    );
    await writeFile(
      path.join(project, 'tsconfig.misuse.json'),
      JSON.stringify({ extends: './tsconfig.json', files: ['misuse.ts'] }),
    );
    const result = await run(process.execPath, [TSC, '-p', path.join(project, 'tsconfig.misuse.json')]).then(
      () => '',
      (error: { stdout?: string }) => String(error.stdout),
    );
    expect(result).toContain(
      "misuse.ts(4,9): error TS2322: Type 'Entitlements' is not assignable to type 'Customer'.",
    );
    expect(result).toContain(
      "misuse.ts(5,60): error TS2339: Property 'email' does not exist on type 'DeletedCustomerRef'.",
    );
  });
});
