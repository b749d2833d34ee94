import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import request from 'supertest';
import { connect, migrate } from '../../src/db.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/infra/embedded-postgres.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A frozen database (every PostgreSQL process stopped, sockets open, nothing answering) is the outage
 * no server-side timeout can end. On a private cluster, so stopping it disturbs no other test file.
 */

/** The PIDs of a postmaster's children (backends and auxiliary processes), read from /proc. */
async function childrenOf(parent: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // The command name may hold spaces and parentheses: fields are counted after its closing ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === parent) children.push(Number(entry));
  }
  return children;
}

async function processState(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone: a backend whose client left.
  }
}

async function poll<T>(probe: () => Promise<T>, done: (value: T) => boolean, what: string, ms: number) {
  const deadline = Date.now() + ms;
  let last: T | undefined;
  for (;;) {
    last = await probe().catch((error: unknown) => error as T);
    if (done(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${what}: ${String(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs a request and measures how long it took to be answered. */
async function timed<T>(run: () => PromiseLike<T>): Promise<{ res: T; ms: number }> {
  const started = Date.now();
  const res = await run();
  return { res, ms: Date.now() - started };
}

describe('a frozen database', () => {
  let dir: string;
  let cluster: EmbeddedPostgres | undefined;
  let server: TestServer | undefined;
  let postmaster: number | undefined;
  const frozen = new Set<number>();
  const logLines: Record<string, any>[] = [];
  const figures: string[] = [];

  let apiKey: string;
  let sessionToken: string;
  let customers: { id: string; email: string }[];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-freeze-'));
    // As root, PostgreSQL runs as the `postgres` user, which must reach the cluster's parent directory.
    await chmod(dir, 0o755);
    const clusterDir = path.join(dir, 'pg');
    cluster = await startEmbeddedPostgres({ dir: clusterDir });
    postmaster = Number((await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    const orm = await connect(cluster.url, { pool: { min: 0, max: 2 } });
    try {
      await migrate(orm);
    } finally {
      await orm.close(true);
    }

    server = await startTestServer({
      shippedDatabaseTimeouts: true,
      env: { DATABASE_URL: cluster.url, LOG_LEVEL: 'info' },
      logDestination: new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
          done();
        },
      }),
    });
    const app = await server.createApp();
    apiKey = app.apiKey;
    const fx = new Fixtures(server, app.appId);
    await fx.plan('free', { projects: 3 }, { isDefault: true });
    customers = [];
    for (let i = 0; i < 4; i++) {
      const email = `frozen-${i}@example.com`;
      customers.push({ id: await fx.customer(email), email });
    }
    // A session is resolved through the change feed's cache, so its requests wait on the feed first.
    sessionToken = await fx.session(customers[1]!.id);
  }, 180_000);

  afterAll(async () => {
    for (const pid of frozen) signal(pid, 'SIGCONT');
    await server?.close();
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (figures.length > 0) process.stdout.write(`database-freeze figures: ${figures.join('; ')}\n`);
  }, 60_000);

  const http = () => request(server!.url);
  const v1 = (url: string, id?: string) => {
    const req = http().get(url).set('authorization', `Bearer ${apiKey}`);
    return id ? req.set('x-request-id', id) : req;
  };
  const graphql = (query: string, token: string, id?: string) => {
    const req = http().post('/graphql').set('authorization', `Bearer ${token}`).send({ query });
    return id ? req.set('x-request-id', id) : req;
  };
  const entitlementCheck = (id?: string) =>
    v1(`/v1/entitlements/check/projects?customerId=${customers[0]!.id}`, id);
  const APPS = '{ apps { id } }';
  const sessionCheck = (id?: string) => {
    const req = http().get('/v1/entitlements/check/projects').set('authorization', `Bearer ${sessionToken}`);
    return id ? req.set('x-request-id', id) : req;
  };

  async function expectServing(): Promise<void> {
    const ready = await http().get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', database: 'up' });
    const list = await v1('/v1/customers');
    expect(list.status).toBe(200);
    expect(list.body.data.map((c: { id: string }) => c.id).sort()).toEqual(customers.map((c) => c.id).sort());
    // Each read answers with its own row: no connection hands over another request's answer.
    const reads = await Promise.all(customers.map((c) => v1(`/v1/customers/${c.id}`)));
    for (const [i, read] of reads.entries()) {
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: customers[i]!.id, email: customers[i]!.email });
    }
    const check = await entitlementCheck();
    expect(check.status).toBe(200);
    expect(check.body).toEqual({ feature: 'projects', allowed: true, value: 3 });
    const own = await sessionCheck();
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ feature: 'projects', allowed: true, value: 3 });
    expect(server!.services.changes.listening).toBe(true);
    const admin = await graphql(APPS, server!.adminToken);
    expect(admin.status).toBe(200);
    expect(admin.body.errors).toBeUndefined();
    expect(admin.body.data.apps.length).toBeGreaterThan(0);
  }

  it('answers 503 within its timeouts while frozen, and 200 again after it thaws, without a restart', async () => {
    // Warm: pooled connections open, the change feed listening.
    await expectServing();

    const { database } = server!.deps.config;
    // The longest wait a request can meet: the change feed, then a pooled connection, then its query.
    const requestBudget = database.changeFeedTimeoutMs + database.acquireTimeoutMs + database.queryTimeoutMs;
    const slack = 3_000;

    // Freeze: the postmaster first (it forks no one while stopped), then every child it has.
    signal(postmaster!, 'SIGSTOP');
    frozen.add(postmaster!);
    for (const pid of await childrenOf(postmaster!)) {
      signal(pid, 'SIGSTOP');
      frozen.add(pid);
    }
    expect(frozen.size).toBeGreaterThan(3);
    for (const pid of frozen) {
      await poll(
        () => processState(pid),
        (state) => state === 'T' || state === undefined,
        `process ${pid} to stop`,
        5_000,
      );
    }

    const [ready, list, check, session, keyed, admin, ...reads] = await Promise.all([
      timed(() => http().get('/readyz')),
      timed(() => v1('/v1/customers', 'frozen-list')),
      timed(() => entitlementCheck('frozen-check')),
      timed(() => sessionCheck('frozen-session')),
      timed(() => graphql(APPS, apiKey, 'frozen-graphql-key')),
      timed(() => graphql(APPS, server!.adminToken, 'frozen-graphql-admin')),
      ...customers.map((c, i) => timed(() => v1(`/v1/customers/${c.id}`, `frozen-read-${i}`))),
    ]);

    expect(ready.res.status).toBe(503);
    expect(ready.res.body).toEqual({ status: 'unavailable', database: 'down' });
    expect(ready.ms).toBeLessThan(database.readinessTimeoutMs + slack);

    const envelope = {
      statusCode: 503,
      message: 'The service is temporarily unavailable, try again later',
      error: 'Service Unavailable',
    };
    for (const { res, ms } of [list, check, session, keyed, ...reads]) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual(envelope);
      expect(ms).toBeLessThan(requestBudget + slack);
    }
    // The admin token needs no database, so this one reaches GraphQL, whose resolver meets the outage.
    expect(admin.res.status).toBe(200);
    expect(admin.res.body).toEqual({
      data: null,
      errors: [
        {
          message: envelope.message,
          locations: [{ line: 1, column: 3 }],
          path: ['apps'],
          extensions: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 },
        },
      ],
    });
    expect(admin.ms).toBeLessThan(requestBudget + slack);
    const slowest = Math.max(...[list, check, session, keyed, admin, ...reads].map((r) => r.ms));
    // The session's freshness could not be confirmed: the feed gave up its connection.
    expect(server!.services.changes.listening).toBe(false);
    figures.push(`readyz 503 after ${ready.ms} ms`, `slowest request 503 after ${slowest} ms`);

    // One line per failed request, a warning naming the outage, with no stack.
    const ids = [
      'frozen-list',
      'frozen-check',
      'frozen-session',
      'frozen-graphql-key',
      'frozen-graphql-admin',
    ];
    for (const id of [...ids, ...customers.map((_, i) => `frozen-read-${i}`)]) {
      const lines = logLines.filter((l) => l.req?.id === id);
      expect({ id, lines }).toEqual({ id, lines: [expect.anything()] });
      expect({ id, ...lines[0] }).toMatchObject({ id, level: 40, outage: { code: 'service_unavailable' } });
      expect(typeof lines[0]!.outage.reason).toBe('string');
      expect(lines[0]!.err).toBeUndefined();
      expect(JSON.stringify(lines[0])).not.toMatch(/\n\s+at /);
    }
    expect(JSON.stringify(logLines)).not.toMatch(/"stack"/);

    // Thaw and wait, with no restart, until every call answers 200 with its own data again.
    const thawed = Date.now();
    for (const pid of frozen) signal(pid, 'SIGCONT');
    frozen.clear();
    await poll(
      async () => {
        await expectServing();
        return true;
      },
      (ok) => ok === true,
      'the server to serve again',
      30_000,
    );
    figures.push(`serving again ${Date.now() - thawed} ms after SIGCONT`);
    // The feed listens again by itself (expectServing's session request asked it to).
    await poll(
      () => server!.services.changes.synced(),
      (synced) => synced === true,
      'the change feed to listen again',
      10_000,
    );
  }, 120_000);
});
