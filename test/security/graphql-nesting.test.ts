import request from 'supertest';
import { documentNestingExceeds, MAX_DOCUMENT_NESTING } from '../../src/graphql/document-scan.js';
import { eventually } from '../helpers/eventually.js';
import { startCli } from '../helpers/process.js';
import { RELAXED_DATABASE_TIMEOUTS } from '../helpers/server.js';

/**
 * Deep nesting in a GraphQL document is refused (400) by a linear scan of its text before graphql-js's
 * recursive parser sees it: a few KB nested a few thousand levels would otherwise overflow its stack (a
 * 500 and an error in the log). A fresh process matters: its stack has not been grown by earlier work.
 */

const nested = (open: string, inner: string, close: string, levels: number) =>
  open.repeat(levels) + inner + close.repeat(levels);

const DEEP = 2650;
const ADMIN_TOKEN = 'nesting-test-admin-token-0123456789';
const ADMIN = `Bearer ${ADMIN_TOKEN}`;

/** One document per bracket kind, each nested 2 650 levels and within the 16 KiB budget of a credential. */
const DEEP_DOCUMENTS: Record<string, string> = {
  'selections ({)': `${'{a'.repeat(DEEP)}${'}'.repeat(DEEP)}`,
  'list values ([)': `{ f(x: ${nested('[', '1', ']', DEEP)}) }`,
  'input objects ({ inside ()': `{ f(x: ${nested('{a:', '1', '}', DEEP)}) }`,
  'variable types ([ inside ()': `query(${'$v:'}${nested('[', 'Int', ']', DEEP)}) { __typename }`,
};

describe('the nesting scan of GraphQL text', () => {
  it('counts {, [ and ( together, and nothing in strings, block strings or comments', () => {
    const within = nested('{a', '', '}', MAX_DOCUMENT_NESTING);
    expect(documentNestingExceeds(within)).toBe(false);
    expect(documentNestingExceeds(`{${within}}`)).toBe(true);
    expect(documentNestingExceeds(`{ f(x: ${nested('[', '1', ']', MAX_DOCUMENT_NESTING - 1)}) }`)).toBe(true);
    const noise = '{'.repeat(100) + '['.repeat(100) + '('.repeat(100);
    expect(documentNestingExceeds(`{ f(x: "${noise}\\" ${noise}") }`)).toBe(false);
    expect(documentNestingExceeds(`{ f(x: """${noise} \\""" ${noise}""") }`)).toBe(false);
    expect(documentNestingExceeds(`# ${noise}\n{ __typename } # ${noise}`)).toBe(false);
    // After a string or a comment, brackets count again.
    expect(documentNestingExceeds(`{ f(x: "}}") ${nested('{a', '', '}', MAX_DOCUMENT_NESTING)} }`)).toBe(
      true,
    );
    expect(documentNestingExceeds(`# }}}\n${noise}`)).toBe(true);
  });
});

describe('deeply nested GraphQL documents on a fresh process', () => {
  let proc: ReturnType<typeof startCli>;
  let base: string;
  beforeAll(async () => {
    proc = startCli(['serve'], {
      ...RELAXED_DATABASE_TIMEOUTS,
      DATABASE_URL: process.env.TEST_DATABASE_URL,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      DATA_DIR: `/tmp/tollgate-nesting-test-${process.pid}`,
      STRIPE_EMULATOR_PORT: '0',
      STRIPE_RECONCILE_INTERVAL_MINUTES: '0',
      JOB_QUEUE_SCHEMA: `jobs_nesting_${process.pid}`,
    });
    base = await eventually(
      () => {
        if (proc.child.exitCode !== null) throw new Error(`serve exited: ${proc.output.stderr}`);
        return /REST API\s+(http:\/\/\S+)\/v1/.exec(proc.output.stdout)?.[1];
      },
      { what: 'the banner', timeoutMs: 30_000 },
    );
  });
  afterAll(async () => {
    proc.child.kill('SIGTERM');
    await proc.exited;
  });

  it.each(Object.entries(DEEP_DOCUMENTS))(
    'refuses deep %s with 400, before parsing',
    async (_kind, query) => {
      expect(Buffer.byteLength(query)).toBeLessThanOrEqual(16384);
      const res = await request(base).post('/graphql').set('authorization', ADMIN).send({ query });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        errors: [
          {
            message: `Query is nested too deep: more than ${MAX_DOCUMENT_NESTING} levels of {, [ and ( together`,
            extensions: { code: 'QUERY_TOO_NESTED', statusCode: 400 },
          },
        ],
      });
    },
  );

  it('applies the same scan to GET', async () => {
    const query = `{ f(x: ${nested('[', '1', ']', 1000)}) }`;
    const res = await request(base).get('/graphql').query({ query });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('QUERY_TOO_NESTED');
  });

  it('answers a document with deep brackets only in a string and a comment', async () => {
    const noise = '['.repeat(3000);
    const res = await request(base)
      .post('/graphql')
      .send({ query: `{ checkCallbackUrl(appId: "${noise}", url: "x") { allowed } } # ${noise}` });
    // Past the scan, GraphQL itself answers (the app id is not one): not the nesting refusal.
    expect(res.body.errors?.[0]?.extensions?.code).not.toBe('QUERY_TOO_NESTED');
    expect(res.status).toBeLessThan(500);
  });

  it('logged no error for any of them', () => {
    const errors = `${proc.output.stdout}\n${proc.output.stderr}`
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number })
      .filter((line) => line.level >= 50);
    expect(errors).toEqual([]);
  });
});
