import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import type { JobQueue } from '../../infra/job-queue.js';
import type { Logger } from '../../infra/logger.js';
import type { OutboundAttemptObserver } from '../../telemetry/metrics.js';
import type { AddressGuard } from './address-guard.js';
import { DELIVERY_QUEUE, type DeliveryJob } from './outbound-events.js';
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
}

/** Counts the attempt and records it, unless this attempt was already counted (a second run of the job). */
const SETTLE_ATTEMPT = `
  with settled as (
    update webhook_delivery set attempts = attempts + 1, status = ?, next_attempt_at = ?, updated_at = ?
     where id = ? and attempts = ? and status = 'pending'
    returning id
  )
  insert into webhook_attempt (id, delivery_id, attempted_at, status_code, duration_ms, excerpt)
  select ?, id, ?, ?, ?, ? from settled
  returning delivery_id as id`;

const LOAD_DELIVERY = `
  select d.id, d.status, d.attempts, e.id as event_id, e.type, e.body, e.app_id, p.id as endpoint_id, p.url,
         p.enabled, p.secret_ciphertext, p.previous_secret_ciphertext, p.previous_secret_expires_at
    from webhook_delivery d
    join webhook_event e on e.id = d.event_id
    join webhook_endpoint p on p.id = d.endpoint_id
   where d.id = ?`;

/**
 * Delivers recorded events: one job per attempt on the job queue, so every instance's workers share the
 * work and each attempt is claimed once. An attempt signs the event's stored body with the endpoint's
 * secret(s) (Standard Webhooks), posts it with a 10 s bound, never follows a redirect, and records what
 * came back. A non-2xx answer, a timeout or a connection error schedules the next attempt by the retry
 * schedule; after the last one the delivery is `failed`, and stays listed and replayable.
 */
export class WebhookDispatcher {
  constructor(private readonly options: DispatcherOptions) {}

  /** Defines the delivery queue and starts this instance's workers on it. */
  async start(): Promise<void> {
    const { jobs } = this.options;
    // A job whose worker died is run again after 30 s (an attempt takes at most 10 s); the attempt
    // number in the job keeps a late duplicate from sending twice.
    await jobs.define(DELIVERY_QUEUE, { expireInSeconds: 30, retryLimit: 5, retryDelay: 5 });
    await jobs.work<DeliveryJob>(
      DELIVERY_QUEUE,
      { batchSize: 50, concurrency: 2, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
      (job) => this.deliver(job),
    );
  }

  /** Makes the attempt `job` names, unless it was made already or the delivery is settled. */
  async deliver(job: DeliveryJob): Promise<void> {
    const { orm } = this.options;
    const em = orm.em.fork();
    const [row] = await em.getConnection().execute<DeliveryRow[]>(LOAD_DELIVERY, [job.deliveryId]);
    if (row?.status !== 'pending' || row.attempts !== job.attempt) return;
    const result = row.enabled
      ? await this.#attempt(row)
      : { ok: false, statusCode: null, durationMs: 0, excerpt: 'not sent: the endpoint is disabled' };
    const retryIn =
      result.ok || job.manual || !row.enabled ? undefined : this.options.retryScheduleSeconds[job.attempt];
    const status = result.ok ? 'succeeded' : retryIn === undefined ? 'failed' : 'pending';
    const now = this.options.clock.now();
    const nextAttemptAt = retryIn === undefined ? null : new Date(now.getTime() + retryIn * 1000);
    const settle = async (tx: EntityManager) => {
      const settled = await tx
        .getConnection()
        .execute<{ id: string }[]>(
          SETTLE_ATTEMPT,
          [
            status,
            nextAttemptAt,
            now,
            row.id,
            job.attempt,
            newId('wha'),
            now,
            result.statusCode,
            result.durationMs,
            result.excerpt,
          ],
          'all',
          tx.getTransactionContext(),
        );
      // Another run of the same job got there first: its record stands, and it scheduled what follows.
      if (settled.length === 0 || !nextAttemptAt) return;
      await this.options.jobs.enqueue<DeliveryJob>(tx, DELIVERY_QUEUE, [
        { data: { deliveryId: row.id, attempt: job.attempt + 1 }, options: { startAfter: nextAttemptAt } },
      ]);
    };
    // The common case (delivered, or no attempt left) is one statement; a retry is scheduled with it.
    if (nextAttemptAt) await em.transactional(settle);
    else await settle(em);
    const outcome = result.ok ? 'succeeded' : nextAttemptAt ? 'retrying' : 'failed';
    this.options.observe?.(outcome, result.durationMs / 1000);
    const line = {
      webhookId: row.event_id,
      deliveryId: row.id,
      endpointId: row.endpoint_id,
      appId: row.app_id,
      type: row.type,
      attempt: job.attempt + 1,
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
      'user-agent': 'Tollgate-Webhooks/1',
      ...signedHeaders(secrets, row.event_id, now, row.body),
    };
    return post(row.url, headers, row.body, this.options.guard, this.options.httpsOnly);
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
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
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
