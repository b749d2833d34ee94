import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import type { JobQueue } from '../../infra/job-queue.js';
import type { Logger } from '../../infra/logger.js';
import { PreparedStatement } from '../../infra/prepared-statement.js';
import type { OutboundAttemptObserver } from '../../telemetry/metrics.js';
import type { AddressGuard } from './address-guard.js';
import { DELIVERY_QUEUE, type DeliveryJob, deliveryJobs } from './outbound-events.js';
import type { SecretBox } from './secret-box.js';
import { signedHeaders } from './webhook-signing.js';

/**
 * Connections to receivers are kept open between attempts. A kept socket is one made to an address the
 * guard checked when it connected; a new one is checked again.
 */
const AGENTS = {
  'http:': new HttpAgent({ keepAlive: true, maxSockets: 20, timeout: 30_000 }),
  'https:': new HttpsAgent({ keepAlive: true, maxSockets: 20, timeout: 30_000 }),
} as const;

/** Standard Webhooks: an attempt that has not been answered in this time failed. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Characters of the receiver's answer kept with each attempt. */
const EXCERPT_CHARS = 200;
/** Bytes of the answer read at most (the rest is not waited for). */
const MAX_READ_BYTES = 4096;

export interface DispatcherOptions {
  readonly orm: MikroORM;
  readonly jobs: JobQueue;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly secrets: SecretBox;
  readonly guard: AddressGuard;
  /** Seconds before each retry after the first attempt; its length is the number of retries. */
  readonly retryScheduleSeconds: readonly number[];
  /** Days a settled event is kept before `purge` deletes it; 0 keeps every event. */
  readonly retentionDays?: number;
  /** Only https URLs are delivered to (production). */
  readonly httpsOnly: boolean;
  readonly observe?: OutboundAttemptObserver;
}

interface DeliveryRow {
  id: string;
  status: string;
  attempts: number;
  event_id: string;
  type: string;
  body: string;
  app_id: string;
  endpoint_id: string;
  url: string;
  enabled: boolean;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: Date | string | null;
}

interface AttemptResult {
  readonly ok: boolean;
  readonly statusCode: number | null;
  readonly durationMs: number;
  readonly excerpt: string;
  /** The headers of the request (signature included, never the secret); absent when none was made. */
  readonly requestHeaders?: Readonly<Record<string, string>>;
}

/** The queue of the sweep that hands the job queue deliveries whose job was lost. */
export const SWEEP_QUEUE = 'webhook-delivery-sweep';
/** A delivery due this long without being attempted has lost its job (see `sweep`). */
const SWEEP_AFTER_SECONDS = 60;
/** Deliveries handed back per sweep at most (the next sweep takes the rest). */
const SWEEP_LIMIT = 1000;

/**
 * Claims the deliveries a batch of jobs names for this attempt, and loads what sending them needs: each
 * is claimed only if it is still pending at the attempt its job names and no live claim holds it, so a
 * duplicate job (a retried batch, a sweep) sends nothing while another instance is at it or after it has
 * settled it. A claim lapses after 30 s (an attempt takes at most 10 s), so one held by a process that
 * died is taken by the job's retry.
 */
const CLAIM_DELIVERIES = new PreparedStatement<DeliveryRow>(
  'tollgate_claim_webhook_deliveries',
  `
  with wanted as (
    select * from unnest(?::text[], ?::int[]) as w(id, attempt)
  ), claimed as (
    update webhook_delivery d set claimed_until = now() + interval '30 seconds'
      from wanted w
     where d.id = w.id and d.attempts = w.attempt and d.status = 'pending'
       and (d.claimed_until is null or d.claimed_until < now())
    returning d.id, d.status, d.attempts, d.event_id, d.endpoint_id
  )
  select c.id, c.status, c.attempts, e.id as event_id, e.type, e.body, e.app_id, p.id as endpoint_id, p.url,
         p.enabled, p.secret_ciphertext, p.previous_secret_ciphertext, p.previous_secret_expires_at
    from claimed c
    join webhook_event e on e.id = c.event_id
    join webhook_endpoint p on p.id = c.endpoint_id`,
);

/**
 * Counts each attempt of a batch and records it, unless that attempt was already counted (a second run of
 * its job), and lets go of the claim.
 */
const SETTLE_ATTEMPTS = new PreparedStatement<{ id: string }>(
  'tollgate_settle_webhook_attempts',
  `
  with v as (
    select * from unnest(?::text[], ?::int[], ?::text[], ?::timestamptz[], ?::text[], ?::timestamptz[],
                         ?::int[], ?::int[], ?::text[], ?::text[])
      as v(id, attempt, status, next_attempt_at, attempt_id, attempted_at, status_code, duration_ms, excerpt,
           request_headers)
  ), settled as (
    update webhook_delivery d
       set attempts = d.attempts + 1, status = v.status, next_attempt_at = v.next_attempt_at,
           updated_at = v.attempted_at, claimed_until = null
      from v
     where d.id = v.id and d.attempts = v.attempt and d.status = 'pending'
    returning d.id
  )
  insert into webhook_attempt (id, delivery_id, attempted_at, status_code, duration_ms, excerpt, request_headers)
  select v.attempt_id, v.id, v.attempted_at, v.status_code, v.duration_ms, v.excerpt, v.request_headers::jsonb
    from v join settled s on s.id = v.id
  returning delivery_id as id`,
);

/** The queue of the hourly purge of settled events past their retention. */
export const RETENTION_QUEUE = 'webhook-retention';
/** Events deleted per statement, and statements per purge at most (the next purge takes the rest). */
const PURGE_BATCH = 5000;
const PURGE_BATCHES = 20;

/**
 * Events older than the retention whose deliveries are all settled (none pending), oldest first; their
 * deliveries and attempts go with them (foreign keys on delete cascade).
 */
const PURGE_EVENTS = new PreparedStatement<{ id: string }>(
  'tollgate_purge_webhook_events',
  `
  with old as (
    select e.id from webhook_event e
     where e.created_at < now() - make_interval(days => ?)
       and not exists (select 1 from webhook_delivery d where d.event_id = e.id and d.status = 'pending')
     order by e.created_at
     limit ?
       for update skip locked
  )
  delete from webhook_event w using old where w.id = old.id
  returning w.id`,
);

/** Pending deliveries long past due and not held by a live claim: their job was lost. */
const LOST_DELIVERIES = new PreparedStatement<{ id: string; attempts: number }>(
  'tollgate_lost_webhook_deliveries',
  `
  select id, attempts from webhook_delivery
   where status = 'pending' and next_attempt_at < now() - make_interval(secs => ?)
     and (claimed_until is null or claimed_until < now())
   order by next_attempt_at
   limit ?`,
);

/** One delivery's attempt in a batch, as it is settled. */
interface Settlement {
  readonly row: DeliveryRow;
  readonly attempt: number;
  readonly result: AttemptResult;
  readonly status: 'succeeded' | 'failed' | 'pending';
  readonly nextAttemptAt: Date | null;
  readonly attemptedAt: Date;
}

/**
 * Delivers recorded events on the job queue, so every instance's workers share the work: a job names one
 * attempt of one or more deliveries, and a worker claims and loads a fetched batch's deliveries in one
 * statement, sends them side by side, and settles them in one statement. An attempt signs the event's
 * stored body with the endpoint's secret(s) (Standard Webhooks), posts it with a 10 s bound, never
 * follows a redirect, and records what came back. A non-2xx answer, a timeout or a connection error
 * schedules the next attempt by the retry schedule; after the last one the delivery is `failed`, and
 * stays listed and replayable. A sweep every minute hands back deliveries whose job was lost (a process
 * that died between a commit and its announcement, a retry whose job could not be added).
 */
export class WebhookDispatcher {
  constructor(private readonly options: DispatcherOptions) {}

  /** Defines the delivery queues and starts this instance's workers on them. */
  async start(): Promise<void> {
    const { jobs } = this.options;
    // A job whose worker died is run again after 30 s (an attempt takes at most 10 s); the attempt
    // number in the job and the claim keep a late duplicate from sending twice.
    await jobs.define(DELIVERY_QUEUE, { expireInSeconds: 30, retryLimit: 5, retryDelay: 5 });
    await jobs.workBatch<DeliveryJob>(
      DELIVERY_QUEUE,
      { batchSize: 50, concurrency: 2, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
      (batch) => this.deliver(batch),
    );
    // One sweep queued or running at a time across instances.
    await jobs.define(SWEEP_QUEUE, { policy: 'exclusive', expireInSeconds: 300, retryLimit: 0 });
    await jobs.work(SWEEP_QUEUE, {}, async () => {
      await this.sweep();
    });
    await jobs.schedule(SWEEP_QUEUE, '* * * * *');
    await jobs.define(RETENTION_QUEUE, { policy: 'exclusive', expireInSeconds: 3600, retryLimit: 0 });
    await jobs.work(RETENTION_QUEUE, {}, async () => {
      await this.purge();
    });
    if (this.options.retentionDays) await jobs.schedule(RETENTION_QUEUE, '41 * * * *');
    else await jobs.unschedule(RETENTION_QUEUE);
  }

  /**
   * Deletes the events older than the retention whose deliveries are all settled, with their deliveries
   * and attempts; how many. Nothing with a retention of 0.
   */
  async purge(): Promise<number> {
    const days = this.options.retentionDays ?? 0;
    if (days === 0) return 0;
    const em = this.options.orm.em.fork();
    let purged = 0;
    for (let batch = 0; batch < PURGE_BATCHES; batch++) {
      const deleted = await PURGE_EVENTS.run(em, [days, PURGE_BATCH]);
      purged += deleted.length;
      if (deleted.length < PURGE_BATCH) break;
    }
    if (purged > 0)
      this.options.logger.info({ events: purged, retentionDays: days }, 'webhook events purged');
    return purged;
  }

  /** Makes the attempts the jobs name, except those made already or held by another instance. */
  async deliver(batch: readonly DeliveryJob[]): Promise<void> {
    const wanted = new Map<string, { attempt: number; manual: boolean }>();
    for (const job of batch) {
      for (const id of job.deliveryIds ?? (job.deliveryId ? [job.deliveryId] : [])) {
        const seen = wanted.get(id);
        wanted.set(id, { attempt: job.attempt, manual: (seen?.manual ?? false) || job.manual === true });
      }
    }
    if (wanted.size === 0) return;
    const em = this.options.orm.em.fork();
    const rows = await CLAIM_DELIVERIES.run(em, [
      [...wanted.keys()],
      [...wanted.values()].map((w) => w.attempt),
    ]);
    const settlements = await Promise.all(
      rows.map(async (row): Promise<Settlement> => {
        const manual = wanted.get(row.id)?.manual === true;
        const result = row.enabled
          ? await this.#attempt(row)
          : { ok: false, statusCode: null, durationMs: 0, excerpt: 'not sent: the endpoint is disabled' };
        const retryIn =
          result.ok || manual || !row.enabled ? undefined : this.options.retryScheduleSeconds[row.attempts];
        const attemptedAt = this.options.clock.now();
        return {
          row,
          attempt: row.attempts,
          result,
          status: result.ok ? 'succeeded' : retryIn === undefined ? 'failed' : 'pending',
          nextAttemptAt: retryIn === undefined ? null : new Date(attemptedAt.getTime() + retryIn * 1000),
          attemptedAt,
        };
      }),
    );
    if (settlements.length === 0) return;
    const settled = new Set(
      (
        await SETTLE_ATTEMPTS.run(em, [
          settlements.map((s) => s.row.id),
          settlements.map((s) => s.attempt),
          settlements.map((s) => s.status),
          settlements.map((s) => s.nextAttemptAt),
          settlements.map(() => newId('wha')),
          settlements.map((s) => s.attemptedAt),
          settlements.map((s) => s.result.statusCode),
          settlements.map((s) => s.result.durationMs),
          settlements.map((s) => s.result.excerpt),
          settlements.map((s) => (s.result.requestHeaders ? JSON.stringify(s.result.requestHeaders) : null)),
        ])
      ).map((r) => r.id),
    );
    // Another run of the same job got there first for the others: its record stands, and it scheduled
    // what follows. A retry whose job cannot be added now is found by the sweep.
    const retries = settlements.filter((s) => s.nextAttemptAt && settled.has(s.row.id));
    await this.options.jobs
      .enqueueNow<DeliveryJob>(
        DELIVERY_QUEUE,
        retries.map((s) => ({
          data: { deliveryIds: [s.row.id], attempt: s.attempt + 1 },
          options: { startAfter: s.nextAttemptAt! },
        })),
      )
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error }, 'webhook retries not scheduled; the sweep sends them'),
      );
    for (const s of settlements) if (settled.has(s.row.id)) this.#report(s);
  }

  /** Hands the job queue the deliveries whose job was lost; how many. */
  async sweep(): Promise<number> {
    const em = this.options.orm.em.fork();
    const lost = await LOST_DELIVERIES.run(em, [SWEEP_AFTER_SECONDS, SWEEP_LIMIT]);
    if (lost.length === 0) return 0;
    const byAttempt = new Map<number, string[]>();
    for (const d of lost) {
      const ids = byAttempt.get(d.attempts) ?? [];
      ids.push(d.id);
      byAttempt.set(d.attempts, ids);
    }
    const jobs = [...byAttempt].flatMap(([attempt, ids]) => deliveryJobs(ids, attempt));
    await this.options.jobs.enqueueNow(DELIVERY_QUEUE, jobs);
    this.options.logger.warn({ deliveries: lost.length }, 'webhook deliveries without a job handed back');
    return lost.length;
  }

  #report({ row, result, status, nextAttemptAt, attempt }: Settlement): void {
    const outcome = result.ok ? 'succeeded' : status === 'pending' ? 'retrying' : 'failed';
    this.options.observe?.(outcome, result.durationMs / 1000);
    const line = {
      webhookId: row.event_id,
      deliveryId: row.id,
      endpointId: row.endpoint_id,
      appId: row.app_id,
      type: row.type,
      attempt: attempt + 1,
      status: result.statusCode,
      durationMs: result.durationMs,
      outcome,
      ...(nextAttemptAt ? { nextAttemptAt: nextAttemptAt.toISOString() } : {}),
    };
    if (result.ok) this.options.logger.info(line, 'webhook delivered');
    else this.options.logger.warn({ ...line, reason: result.excerpt }, 'webhook attempt failed');
  }

  async #attempt(row: DeliveryRow): Promise<AttemptResult> {
    const now = this.options.clock.now();
    let secrets: string[];
    try {
      secrets = [this.options.secrets.open(row.secret_ciphertext)];
      if (
        row.previous_secret_ciphertext &&
        row.previous_secret_expires_at &&
        new Date(row.previous_secret_expires_at).getTime() > now.getTime()
      ) {
        secrets.push(this.options.secrets.open(row.previous_secret_ciphertext));
      }
    } catch {
      // Recorded like any failed attempt, so the delivery does not stay pending for ever.
      return {
        ok: false,
        statusCode: null,
        durationMs: 0,
        excerpt:
          'not sent: the signing secret cannot be decrypted (was WEBHOOK_SECRET_KEY changed? rotate the secret)',
      };
    }
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(row.body)),
      'user-agent': 'Tollgate-Webhooks/1',
      ...signedHeaders(secrets, row.event_id, now, row.body),
    };
    // Kept with the attempt, so the operator sees what the receiver was sent beside its answer.
    const result = await post(row.url, headers, row.body, this.options.guard, this.options.httpsOnly);
    return { ...result, requestHeaders: headers };
  }
}

/** One POST, bounded in time and in what is read back; never throws. */
function post(
  target: string,
  headers: Record<string, string>,
  body: string,
  guard: AddressGuard,
  httpsOnly: boolean,
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...result, durationMs: elapsed() });
    };
    const failed = (reason: string) =>
      finish({ ok: false, statusCode: null, excerpt: reason.slice(0, EXCERPT_CHARS) });
    let url: URL;
    try {
      url = new URL(target);
      if (url.protocol !== 'https:' && (httpsOnly || url.protocol !== 'http:')) {
        return failed(`refused: ${url.protocol} URLs are not delivered to`);
      }
      guard.checkHost(url.hostname);
    } catch (error) {
      return failed(error instanceof Error ? error.message : String(error));
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: 'POST',
        headers,
        lookup: guard.lookup,
        timeout: ATTEMPT_TIMEOUT_MS,
        agent: AGENTS[url.protocol as keyof typeof AGENTS],
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = (early: boolean) => {
          const statusCode = res.statusCode ?? 0;
          finish({
            ok: statusCode >= 200 && statusCode < 300,
            statusCode,
            excerpt: Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS),
          });
          // The rest of a long answer is not waited for; a fully read one leaves its socket for reuse.
          if (early) res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= MAX_READ_BYTES) done(true);
        });
        res.on('end', () => done(false));
        res.on('error', () => done(true));
      },
    );
    // One bound for the whole attempt: connecting, sending and the answer.
    const timer = setTimeout(() => {
      failed(`timeout: no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`);
      req.destroy();
    }, ATTEMPT_TIMEOUT_MS);
    req.on('close', () => clearTimeout(timer));
    req.on('timeout', () => req.destroy(new Error('socket timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      failed(error.code === 'REFUSED_ADDRESS' ? error.message : `${error.code ?? 'error'}: ${error.message}`);
    });
    req.end(body);
  });
}
