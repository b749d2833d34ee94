/**
 * Shared parts of the GraphQL benches (bench/graphql-hostile.js, bench/graphql-fairness.js): a scratch
 * database, Tollgate from dist/ in a child process, load generators in child processes of their own
 * (so the process measuring latency does not share its event loop with the load it measures against),
 * and small statistics. Loopback only; every run is bounded in time.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import autocannon from 'autocannon';

export const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;
const SELF = fileURLToPath(import.meta.url);

/** Creates a migrated scratch database, runs `fn` with its URL, drops it whatever happens. */
export async function withScratchDatabase(prefix, fn) {
  const { createScratchDatabase, dropDatabase } = await import(dist('infra/database-admin.js'));
  const { connect, migrate } = await import(dist('db.js'));
  const name = `${prefix}_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(SERVER_URL, name);
  try {
    const orm = await connect(url);
    try {
      await migrate(orm);
    } finally {
      await orm.close(true);
    }
    return await fn(url);
  } finally {
    await dropDatabase(SERVER_URL, name);
  }
}

/** Starts Tollgate from dist/ in a child process; resolves to { url, adminToken, stop }. */
export async function startTollgate(databaseUrl, env = {}) {
  const adminToken = `tg_admin_bench_${randomBytes(16).toString('hex')}`;
  const child = fork(SELF, ['--serve-tollgate'], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    // BENCH_PROFILE_DIR: a V8 CPU profile of Tollgate, written there when it stops.
    execArgv: process.env.BENCH_PROFILE_DIR
      ? [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
      : process.execArgv,
    env: {
      ...process.env,
      BENCH_TOLLGATE_ENV: JSON.stringify({ DATABASE_URL: databaseUrl, ADMIN_TOKEN: adminToken, ...env }),
    },
  });
  const url = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`Tollgate exited (${code}) before listening`)));
  });
  return {
    url,
    adminToken,
    pid: child.pid,
    /** The CPU time (user + system, all its threads) Tollgate has used, in ms. */
    cpu: () => cpuMs(child.pid),
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    },
  };
}

/** Runs autocannon with `options` in a child process; resolves to its summary. */
export function loadInChild(options) {
  const child = fork(SELF, ['--load'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const done = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`load child exited ${code}`))));
  });
  child.send(options);
  return done;
}

/** Runs autocannon here (for the measured side). */
export function load(options) {
  return autocannon(options);
}

/** A GraphQL request and its answer, timed. */
export async function graphql(url, query, token, variables) {
  const started = performance.now();
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json();
  return { status: res.status, body, ms: performance.now() - started };
}

/** Creates an app through the admin GraphQL API; returns its id and API key. */
export async function createApp(url, adminToken, name) {
  const res = await graphql(
    url,
    'mutation($input: CreateAppInput!) { createApp(input: $input) { apiKey app { id } } }',
    adminToken,
    { input: { name } },
  );
  if (res.body.errors) throw new Error(`createApp failed: ${JSON.stringify(res.body.errors)}`);
  return { appId: res.body.data.createApp.app.id, apiKey: res.body.data.createApp.apiKey };
}

/**
 * The Node options the image runs Tollgate with (the Dockerfile's `ENV … NODE_OPTIONS=…`), so a bench
 * measures the process as it runs in production. Empty when the Dockerfile sets none.
 */
export function imageNodeOptions() {
  const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');
  return /^\s*(?:ENV\s+)?NODE_OPTIONS=(\S+)/m.exec(dockerfile)?.[1] ?? '';
}

/** User + system CPU time of a process, in ms (fields 14 and 15 of /proc/<pid>/stat, in clock ticks of 10 ms). */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function loadavg() {
  return readFileSync('/proc/loadavg', 'utf8').trim();
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Child: Tollgate from dist/ with production-like settings plus the bench's environment. */
async function serveTollgate() {
  const { loadConfig } = await import(dist('config.js'));
  const { startServer } = await import(dist('server.js'));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    STRIPE_EMULATOR_PORT: String(await freePort()),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    // GRAPHQL_* settings from the bench's environment reach the server, to compare limits.
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('GRAPHQL_'))),
    ...JSON.parse(process.env.BENCH_TOLLGATE_ENV),
  });
  const server = await startServer(config, { seedDemo: false });
  process.on('SIGTERM', () => {
    server.close().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send(server.url);
}

/** Child: one autocannon run, its summary sent back. */
function runLoad() {
  process.once('message', async (options) => {
    const result = await autocannon(options);
    process.send({
      requests: result.requests.total,
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      statusCodes: result.statusCodeStats,
      errors: result.errors,
      timeouts: result.timeouts,
    });
    process.exit(0);
  });
}

if (process.argv[1] === SELF) {
  if (process.argv[2] === '--serve-tollgate') await serveTollgate();
  else if (process.argv[2] === '--load') runLoad();
}
