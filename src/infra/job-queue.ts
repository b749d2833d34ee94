import type { EntityManager } from '@mikro-orm/postgresql';
import { fromKysely, type Job, PgBoss, type Queue, type SendOptions } from 'pg-boss';
import type { Logger } from './logger.js';

/**
 * Background work on PostgreSQL (pg-boss): jobs are rows in the same database as everything else, so a
 * job can be enqueued in the transaction of the change that needs it (it exists exactly when the change
 * is committed), every instance's workers claim jobs with `FOR UPDATE SKIP LOCKED` (each job runs once at
 * a time), and a job whose worker died is taken back after its queue's `expireInSeconds` and run again.
 *
 * One instance per process, started and stopped with the server (src/server.ts). Features define their
 * queues and workers on it at start; a one-shot command opens it without workers (`workers: false`), so
 * what it enqueues is run by a serving instance.
 */
export interface JobQueueOptions {
  readonly connectionString: string;
  readonly logger: Logger;
  /** PostgreSQL schema of the queue's own tables (pg-boss creates and migrates it). */
  readonly schema: string;
  /**
   * How often expired jobs (a worker died holding them) are taken back, and queue housekeeping runs.
   * Bounds how long a killed process delays its jobs, together with each queue's `expireInSeconds`.
   */
  readonly superviseIntervalSeconds: number;
  /** Run workers and housekeeping here (a serving instance), or only enqueue (a one-shot command). */
  readonly workers: boolean;
  /** Connections the queue's own pool may open (workers' fetches, housekeeping). */
  readonly maxConnections?: number;
  readonly applicationName?: string;
}

export interface WorkerOptions {
  /** Jobs fetched per poll; the handler is called for each. */
  readonly batchSize?: number;
  /** Pollers running at once in this process. */
  readonly concurrency?: number;
  /** How often an idle worker looks for new jobs (at least 0.5 s). */
  readonly pollingIntervalSeconds?: number;
  /** Fetch again at once while fetches come back full (a backlog), instead of waiting for the next poll. */
  readonly burstWhenBatchFull?: boolean;
}

export type JobHandler<T> = (
  data: T,
  job: { readonly id: string; readonly retryCount: number },
) => Promise<void>;

export type EnqueueOptions = Pick<SendOptions, 'startAfter' | 'singletonKey' | 'priority'>;

export class JobQueue {
  readonly #boss: PgBoss;
  readonly #logger: Logger;
  readonly #workers: boolean;
  #stopped = false;

  private constructor(boss: PgBoss, logger: Logger, workers: boolean) {
    this.#boss = boss;
    this.#logger = logger;
    this.#workers = workers;
  }

  /** Connects, creates or migrates the queue's schema, and starts housekeeping (with workers). */
  static async start(options: JobQueueOptions): Promise<JobQueue> {
    const boss = new PgBoss({
      connectionString: options.connectionString,
      schema: options.schema,
      application_name: options.applicationName ?? 'tollgate-jobs',
      max: options.maxConnections ?? 4,
      supervise: options.workers,
      schedule: options.workers,
      superviseIntervalSeconds: options.superviseIntervalSeconds,
      monitorIntervalSeconds: options.superviseIntervalSeconds,
      registerInstance: false,
      persistWarnings: false,
      // Workers poll: waking every worker by NOTIFY on each insert cost more than it saved under load
      // (see docs/performance.md, Outbound webhooks), and polling needs no dedicated connection.
    });
    boss.on('error', (error) => options.logger.error({ err: error }, 'job queue error'));
    boss.on('warning', (warning) => options.logger.warn({ warning }, 'job queue warning'));
    await boss.start();
    return new JobQueue(boss, options.logger, options.workers);
  }

  /** Creates the queue when missing, else brings its options up to date (idempotent; safe on every start). */
  async define(name: string, options: Omit<Queue, 'name'> = {}): Promise<void> {
    const existing = await this.#boss.getQueue(name);
    if (existing) {
      // A queue's policy and partitioning are fixed at creation; pg-boss refuses them in an update, so the
      // next start of a queue created with a policy would fail if they were passed again.
      const { policy: _policy, partition: _partition, ...updatable } = options;
      await this.#boss.updateQueue(name, updatable);
    } else {
      await this.#boss.createQueue(name, options);
    }
  }

  /**
   * Adds jobs in `em`'s current transaction when there is one: they are committed or rolled back with the
   * change that caused them. Outside a transaction they are added at once.
   */
  async enqueue<T extends object>(
    em: EntityManager,
    name: string,
    jobs: readonly { data: T; options?: EnqueueOptions }[],
  ): Promise<void> {
    // pg-boss's statements use `$1` placeholders, so they go to the driver through the Kysely
    // connection MikroORM runs on (its own `execute` would rewrite `?` placeholders instead).
    await this.#insert(name, jobs, fromKysely(em.getTransactionContext() ?? em.getConnection().getClient()));
  }

  /**
   * Adds jobs at once, on the queue's own connections, outside any transaction: for work announced after
   * the change that needs it has committed (whoever announces it must also have a way to find work whose
   * announcement was lost, since a process can die between its commit and this call).
   */
  async enqueueNow<T extends object>(
    name: string,
    jobs: readonly { data: T; options?: EnqueueOptions }[],
  ): Promise<void> {
    await this.#insert(name, jobs);
  }

  async #insert<T extends object>(
    name: string,
    jobs: readonly { data: T; options?: EnqueueOptions }[],
    db?: ReturnType<typeof fromKysely>,
  ): Promise<void> {
    if (jobs.length === 0) return;
    await this.#boss.insert(
      name,
      jobs.map((job) => ({ data: job.data, ...job.options })),
      db ? { db } : undefined,
    );
  }

  /**
   * Runs `handler` once for each batch of jobs of `name` fetched on this instance, so that work the jobs
   * share (loading, settling) can be done in one statement; a rejected handler leaves the whole batch to
   * the queue's retries, so it must tolerate a second run of jobs that already succeeded.
   */
  async workBatch<T extends object>(
    name: string,
    options: WorkerOptions,
    handler: (batch: readonly T[]) => Promise<void>,
  ): Promise<void> {
    await this.#work<T>(name, options, async (batch) => {
      try {
        await handler(batch.map((job) => job.data));
      } catch (error) {
        this.#logger.warn({ err: error, queue: name }, 'job batch failed; the queue retries it');
        throw error;
      }
    });
  }

  /**
   * Runs `handler` for each job of `name` on this instance; a rejected handler leaves the job to the
   * queue's retries. Delivery is at least once: a job can run again after a crash or a failed batch.
   */
  async work<T extends object>(name: string, options: WorkerOptions, handler: JobHandler<T>): Promise<void> {
    await this.#work<T>(name, options, async (batch) => {
      // The jobs of a batch run side by side; one that fails fails the batch, whose jobs the queue
      // then runs again, so handlers must tolerate a second run of a job that already succeeded.
      const outcomes = await Promise.allSettled(
        batch.map((job) => handler(job.data, { id: job.id, retryCount: job.retryCount })),
      );
      const failure = outcomes.find((outcome) => outcome.status === 'rejected');
      if (failure) {
        this.#logger.warn({ err: failure.reason, queue: name }, 'job failed; the queue retries it');
        throw failure.reason;
      }
    });
  }

  async #work<T extends object>(
    name: string,
    options: WorkerOptions,
    handler: (batch: Job<T>[]) => Promise<void>,
  ): Promise<void> {
    if (!this.#workers) throw new Error('this job queue was opened without workers');
    await this.#boss.work<T>(
      name,
      {
        batchSize: options.batchSize ?? 1,
        localConcurrency: options.concurrency ?? 1,
        pollingIntervalSeconds: options.pollingIntervalSeconds ?? 2,
        burstWhenBatchFull: options.burstWhenBatchFull ?? false,
      },
      handler,
    );
  }

  /** Runs a job of `name` on a cron schedule (UTC), once across all instances per slot. */
  async schedule<T extends object>(name: string, cron: string, data?: T): Promise<void> {
    await this.#boss.schedule(name, cron, data ?? null, { tz: 'UTC' });
  }

  /** Removes the cron schedule of `name`; nothing happens when there is none. */
  async unschedule(name: string): Promise<void> {
    await this.#boss.unschedule(name);
  }

  /** Stops fetching, waits (bounded) for running handlers, then closes the pool. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#boss.stop({ graceful: true, timeout: timeoutMs });
  }
}
