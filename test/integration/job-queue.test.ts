import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { connect, type Orm, withContext } from '../../src/db.js';
import { JobQueue } from '../../src/infra/job-queue.js';
import { createLogger } from '../../src/infra/logger.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The job queue (src/infra/job-queue.ts) on the run's real PostgreSQL: a job enqueued in a MikroORM
 * transaction exists exactly when that transaction commits, and a job claimed by a process that was
 * killed is taken back and run again within the queue's expiry.
 */

const databaseUrl = process.env.TEST_DATABASE_URL!;
const logger = createLogger('silent');
let orm: Orm;
const queues: JobQueue[] = [];

async function openQueue(schema: string, workers = true): Promise<JobQueue> {
  const queue = await JobQueue.start({
    connectionString: databaseUrl,
    logger,
    schema,
    superviseIntervalSeconds: 1,
    workers,
  });
  queues.push(queue);
  return queue;
}

beforeAll(async () => {
  orm = await connect(databaseUrl);
});

afterAll(async () => {
  await Promise.all(queues.map((queue) => queue.stop()));
  await orm.close(true);
});

const newSchema = () => `jobs_${randomBytes(6).toString('hex')}`;

describe('job queue', () => {
  it('runs a job enqueued in a committed transaction, and never one whose transaction rolled back', async () => {
    const queue = await openQueue(newSchema());
    await queue.define('greetings');
    const received: string[] = [];
    await queue.work<{ word: string }>('greetings', { pollingIntervalSeconds: 0.5 }, async (data) => {
      received.push(data.word);
    });

    await expect(
      withContext(orm, () =>
        orm.em.transactional(async (em) => {
          await queue.enqueue(em, 'greetings', [{ data: { word: 'rolled-back' } }]);
          throw new Error('the change fails after its job was enqueued');
        }),
      ),
    ).rejects.toThrow('the change fails after its job was enqueued');
    await withContext(orm, () =>
      orm.em.transactional(async (em) => {
        await queue.enqueue(em, 'greetings', [{ data: { word: 'committed' } }]);
      }),
    );

    await eventually(() => (received.includes('committed') ? true : undefined), {
      what: 'the committed job to run',
    });
    // The committed job was enqueued after the rolled-back one: had that one existed, it would have run first.
    expect(received).toEqual(['committed']);
  });

  it('keeps an enqueued job invisible to workers until its transaction commits', async () => {
    const schema = newSchema();
    const queue = await openQueue(schema);
    await queue.define('pending');
    const received: string[] = [];
    await queue.work<{ n: number }>('pending', { pollingIntervalSeconds: 0.5 }, async (data) => {
      received.push(String(data.n));
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let enqueued!: () => void;
    const wasEnqueued = new Promise<void>((resolve) => {
      enqueued = resolve;
    });
    const transaction = withContext(orm, () =>
      orm.em.transactional(async (em) => {
        await queue.enqueue(em, 'pending', [{ data: { n: 1 } }]);
        enqueued();
        await held;
      }),
    );
    await wasEnqueued;
    // Seen from another connection, as a worker on another instance would look: nothing yet.
    expect(await countJobs(schema, 'pending')).toBe(0);
    release();
    await transaction;
    expect(await countJobs(schema, 'pending')).toBe(1);
    await eventually(() => (received.length === 1 ? true : undefined), { what: 'the job after commit' });
    expect(received).toEqual(['1']);
  });

  it('takes back a job claimed by a process that was killed, and runs it again', async () => {
    const schema = newSchema();
    const queue = await openQueue(schema);
    await queue.define('fragile', { expireInSeconds: 2, retryLimit: 3 });
    await withContext(orm, () =>
      orm.em.transactional(async (em) => {
        await queue.enqueue(em, 'fragile', [{ data: { id: 'job-1' } }]);
      }),
    );

    // Another process claims the job and is killed while it holds it.
    const holder = startHolder(schema, 'fragile');
    await eventually(() => (holder.output.stdout.includes('claimed job-1') ? true : undefined), {
      what: 'the other process to claim the job',
      timeoutMs: 30_000,
    });
    holder.child.kill('SIGKILL');
    await holder.exited;

    const received: string[] = [];
    await queue.work<{ id: string }>('fragile', { pollingIntervalSeconds: 0.5 }, async (data, job) => {
      received.push(`${data.id} retry ${job.retryCount}`);
    });
    // Expiry (2 s) plus a supervision pass (1 s) plus a poll; generous for a loaded machine.
    await eventually(() => (received.length > 0 ? true : undefined), {
      what: 'the job to be taken back from the killed process',
      timeoutMs: 30_000,
    });
    expect(received).toEqual(['job-1 retry 1']);
  });
});

/** Jobs of `name` in the queue's table, counted on a connection of its own. */
async function countJobs(schema: string, name: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(`select count(*)::int as n from "${schema}".job where name = $1`, [
      name,
    ]);
    return rows[0].n;
  } finally {
    await client.end();
  }
}

/** A separate node process that claims jobs of `name` and never finishes them. */
function startHolder(schema: string, name: string) {
  const module = path.resolve('dist/src/infra/job-queue.js');
  const script = `
    import { JobQueue } from ${JSON.stringify(module)};
    const queue = await JobQueue.start({
      connectionString: process.env.DATABASE_URL, logger: { error() {}, warn() {}, info() {}, debug() {} },
      schema: ${JSON.stringify(schema)}, superviseIntervalSeconds: 60, workers: true,
    });
    await queue.work(${JSON.stringify(name)}, { pollingIntervalSeconds: 0.5 }, async (data) => {
      console.log('claimed ' + data.id);
      await new Promise(() => {});
    });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl },
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => {
    output.stdout += d;
  });
  child.stderr.on('data', (d) => {
    output.stderr += d;
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, output, exited };
}
