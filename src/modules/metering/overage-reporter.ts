import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import type { JobQueue } from '../../infra/job-queue.js';
import type { Logger } from '../../infra/logger.js';
import type { PaymentProvider } from '../payments/payment-provider.js';

/** The queue of overage reports: a job names a usage, or nothing (a sweep of everything pending). */
export const OVERAGE_REPORT_QUEUE = 'usage-overage-report';
/** One sweep queued or running at a time across instances. */
export const OVERAGE_SWEEP_QUEUE = 'usage-overage-sweep';

interface ReportJob {
  readonly usageId?: string;
}

/** Rows one run reports at most; a sweep that finds more queues another. */
const BATCH = 500;

interface PendingRow {
  readonly id: string;
  readonly overage: string;
  readonly overage_price_id: string;
  readonly created_at: Date;
  readonly reported: boolean;
  readonly refunded: boolean;
  readonly stripe_customer_id: string;
}

/**
 * Reports overage to the payment provider as meter events, through the job queue. A consumption with
 * overage is recorded first (its own statement, committed); the report is announced after the commit,
 * and a sweep (at start, then every minute) finds what no announcement reached, so a process that dies
 * between the commit and the report still reports. Each usage's meter event has the usage's id as its
 * `identifier`, so a report run twice (a retry, the sweep and an announcement side by side) is counted
 * once by the provider. A refunded usage whose overage was reported gets its event cancelled (Stripe's
 * meter event adjustment), so it is not billed.
 */
export class OverageReporter {
  readonly #eventNames = new Map<string, string>();

  constructor(
    private readonly options: {
      readonly orm: MikroORM;
      readonly payments: PaymentProvider;
      readonly jobs: JobQueue;
      readonly clock: Clock;
      readonly logger: Logger;
      /** Seconds an announced report waits before it runs (0: at once); the sweep does not wait. */
      readonly delaySeconds: number;
    },
  ) {}

  async start(): Promise<void> {
    const { jobs } = this.options;
    await jobs.define(OVERAGE_REPORT_QUEUE, {
      expireInSeconds: 60,
      retryLimit: 10,
      retryDelay: 5,
      retryBackoff: true,
    });
    await jobs.workBatch<ReportJob>(
      OVERAGE_REPORT_QUEUE,
      { batchSize: 100, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
      async (batch) => {
        await this.report(batch.map((job) => job.usageId).filter((id): id is string => id !== undefined));
      },
    );
    await jobs.define(OVERAGE_SWEEP_QUEUE, { policy: 'exclusive', expireInSeconds: 300, retryLimit: 0 });
    await jobs.work(OVERAGE_SWEEP_QUEUE, {}, async () => {
      await this.sweep();
    });
    await jobs.schedule(OVERAGE_SWEEP_QUEUE, '* * * * *');
    // What a previous process recorded and did not report is reported now, not at the next minute.
    await jobs.enqueueNow(OVERAGE_SWEEP_QUEUE, [{ data: {} }]);
  }

  /**
   * Announces a usage's overage (or its refund) after its commit; a failure here is only logged, since
   * the sweep finds the usage anyway.
   */
  async announce(usageId: string): Promise<void> {
    const { delaySeconds } = this.options;
    try {
      await this.options.jobs.enqueueNow<ReportJob>(OVERAGE_REPORT_QUEUE, [
        { data: { usageId }, options: delaySeconds > 0 ? { startAfter: delaySeconds } : undefined },
      ]);
    } catch (error) {
      this.options.logger.warn({ err: error, usageId }, 'overage report not queued; the sweep reports it');
    }
  }

  /** Reports everything pending, a batch at a time. */
  async sweep(): Promise<void> {
    while ((await this.report(null)) === BATCH) {
      // a full batch: there may be more
    }
  }

  /**
   * Sends the meter events (and cancellations) the provider has not heard of, of the usages `ids` or of
   * any usage (`null`), and marks them sent. Returns how many usages it looked at. A failure leaves the
   * rest pending: the queue retries the job, and the sweep finds them anyway.
   */
  async report(ids: readonly string[] | null): Promise<number> {
    if (ids !== null && ids.length === 0) return 0;
    const connection = this.options.orm.em.getConnection();
    // A usage is reported to the Stripe customer of its subject's latest subscription; a subject without
    // one has no one to bill, and its overage stays unreported (not selected, so it never blocks a batch).
    const rows = await connection.execute<PendingRow[]>(
      `select u.id, u.overage, u.overage_price_id, u.created_at,
              u.overage_reported_at is not null as reported, u.refunded_at is not null as refunded,
              s.stripe_customer_id
         from usage_record u
         join lateral (
           select s.stripe_customer_id from subscription s
            where s.app_id = u.app_id and (s.customer_id = u.subject_id or s.organization_id = u.subject_id)
            order by s.created_at desc limit 1) s on true
        where u.overage > 0
          and (u.overage_reported_at is null or (u.refunded_at is not null and u.overage_cancelled_at is null))
          ${ids === null ? '' : 'and u.id in (select jsonb_array_elements_text(?::jsonb))'}
        order by u.created_at limit ${BATCH}`,
      ids === null ? [] : [JSON.stringify(ids)],
    );
    // One usage failing (the provider refusing it) does not hold back the others; the job still fails
    // afterwards, so the queue retries it.
    let failure: unknown;
    for (const row of rows) {
      try {
        await this.#reportOne(row);
      } catch (error) {
        this.options.logger.warn({ err: error, usageId: row.id }, 'overage report failed; it is retried');
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
    return rows.length;
  }

  async #reportOne(row: PendingRow): Promise<void> {
    const { payments, clock } = this.options;
    const eventName = await this.#eventName(row.overage_price_id);
    const connection = this.options.orm.em.getConnection();
    if (!row.reported) {
      await payments.reportMeterEvent({
        eventName,
        customerId: row.stripe_customer_id,
        value: Number(row.overage),
        identifier: row.id,
        timestamp: new Date(row.created_at),
      });
      await connection.execute('update usage_record set overage_reported_at = ? where id = ?', [
        clock.now(),
        row.id,
      ]);
    }
    if (row.refunded) {
      await payments.cancelMeterEvent({ eventName, identifier: row.id });
      await connection.execute('update usage_record set overage_cancelled_at = ? where id = ?', [
        clock.now(),
        row.id,
      ]);
    }
  }

  /** The event name of the meter behind an overage price (a price's meter never changes). */
  async #eventName(priceId: string): Promise<string> {
    const known = this.#eventNames.get(priceId);
    if (known) return known;
    const { payments } = this.options;
    const price = await payments.retrievePrice(priceId);
    const meter = price?.meter ? await payments.retrieveMeter(price.meter) : null;
    if (!meter) throw new Error(`overage price ${priceId} has no Billing Meter at the payment provider`);
    this.#eventNames.set(priceId, meter.eventName);
    return meter.eventName;
  }
}
