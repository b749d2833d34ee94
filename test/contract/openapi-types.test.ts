import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * schema/openapi.yaml as a code generator reads it: `openapi-typescript` with its default settings (what
 * a new user would try) must give types a program can use, and the client package's committed types must
 * be its output.
 */
const run = promisify(execFile);
const ROOT = process.cwd();
const CLIENT = path.join(ROOT, 'packages/client');
/** The client package's own copy (it needs TypeScript 5, the repository compiles with 7); hoisted if npm could. */
const GENERATOR = [CLIENT, ROOT]
  .map((where) => path.join(where, 'node_modules/openapi-typescript/bin/cli.js'))
  .find((file) => existsSync(file))!;
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-openapi-types-'));
  await run(process.execPath, [
    GENERATOR,
    path.join(ROOT, 'schema/openapi.yaml'),
    '-o',
    path.join(dir, 'api.ts'),
  ]);
  await writeFile(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        skipLibCheck: true,
        types: [],
      },
      include: ['*.ts'],
    }),
  );
}, 60_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Type-checks `program` beside the generated `api.ts`; the compiler's report, empty when it passes. */
async function typeCheck(program: string): Promise<string> {
  await rm(path.join(dir, 'program.ts'), { force: true });
  await writeFile(path.join(dir, 'program.ts'), program);
  try {
    await run(process.execPath, [TSC, '-p', path.join(dir, 'tsconfig.json')]);
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

const HEADER = `import type { paths } from './api.js';
type CreateBody = paths['/v1/customers']['post']['requestBody']['content']['application/json'];
type Created = paths['/v1/customers']['post']['responses']['201']['content']['application/json'];
`;

describe('types generated from schema/openapi.yaml with openapi-typescript', () => {
  it('compile a program that creates a customer with metadata and reads it back', async () => {
    const report = await typeCheck(`${HEADER}
const body: CreateBody = { email: 'a@example.com', name: 'Ada', metadata: { plan: 'gold', seats: 3, tags: ['b2b'] } };
declare const created: Created;
const plan: unknown = created.metadata.plan;
const name: string | null = created.name;
const update: paths['/v1/customers/{id}']['patch']['requestBody'] = {
  content: { 'application/json': { metadata: { plan: null } } },
};
const checkout: paths['/v1/checkout/session']['post']['requestBody']['content']['application/json'] = {
  planId: 'pro', successUrl: 'https://a.example/ok', cancelUrl: 'https://a.example/no', email: 'a@example.com',
  metadata: { campaign: 'spring' },
};
export { body, plan, name, update, checkout };
`);
    expect(report).toBe('');
  });

  it('leave a request field with a default optional: a cancel without a body, a plan change without proration', async () => {
    const report = await typeCheck(`${HEADER}
type Cancel = NonNullable<paths['/v1/subscriptions/{id}/cancel']['post']['requestBody']>['content']['application/json'];
type ChangePlan = paths['/v1/subscriptions/{id}/change-plan']['post']['requestBody']['content']['application/json'];
type Preview = paths['/v1/subscriptions/{id}/change-plan/preview']['post']['requestBody']['content']['application/json'];
const cancel: Cancel = {};
const atPeriodEnd: Cancel = { atPeriodEnd: true };
const change: ChangePlan = { planId: 'team' };
const preview: Preview = { planId: 'team' };
const successUrl: paths['/v1/checkout/session']['post']['requestBody']['content']['application/json']['successUrl'] =
  'https://app.example.com/welcome?session={CHECKOUT_SESSION_ID}';
export { cancel, atPeriodEnd, change, preview, successUrl };
`);
    expect(report).toBe('');
  });

  it('still reject a program that breaks the document (so the checks above can fail)', async () => {
    const report = await typeCheck(`${HEADER}
const body: CreateBody = { name: 'no e-mail', metadata: { plan: 'gold' } };
export { body };
`);
    expect(report).toMatch(/error TS2741: Property 'email' is missing/);
  });

  it("match the client package's committed types (regenerate: npm run generate -w @tollgate/client)", async () => {
    const generated = await readFile(path.join(dir, 'api.ts'), 'utf8');
    const committed = await readFile(path.join(CLIENT, 'src/openapi.ts'), 'utf8');
    expect(committed).toBe(generated);
  });
});
