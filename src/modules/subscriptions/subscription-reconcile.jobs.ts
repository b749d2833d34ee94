import type { JobQueue } from '../../infra/job-queue.js';

/** The queue of the periodic reconciliation with Stripe. */
export const STRIPE_RECONCILE_QUEUE = 'stripe-reconcile';

/**
 * The cron expression (UTC) of a reconciliation every `minutes`: a divisor of an hour (`*\/15 * * * *`)
 * or a whole number of hours dividing a day (`0 *\/6 * * *`); null for 0 (off). Other intervals cannot be
 * said in cron without drifting, so the configuration refuses them (see `isReconcileInterval`).
 */
export function reconcileCron(minutes: number): string | null {
  if (minutes === 0) return null;
  if (minutes < 60) return `*/${minutes} * * * *`;
  if (minutes === 1440) return '0 0 * * *';
  return `0 */${minutes / 60} * * *`;
}

/**
 * Puts the reconciliation on the job queue: a cron schedule makes one job per slot across all instances,
 * and the queue's `exclusive` policy allows one job queued or running at a time anywhere, so runs never
 * overlap and a slot that comes while one still runs adds nothing. A run that dies with its process is
 * taken back after an hour and retried once.
 * With 0 minutes the schedule is removed, so no instance keeps running an old one.
 */
export async function scheduleStripeReconcile(
  jobs: JobQueue,
  intervalMinutes: number,
  run: () => Promise<unknown>,
): Promise<void> {
  await jobs.define(STRIPE_RECONCILE_QUEUE, {
    policy: 'exclusive',
    expireInSeconds: 3600,
    retryLimit: 1,
    retryDelay: 60,
  });
  // The queue's usual polling (one indexed query every two seconds), so a queued run starts promptly.
  await jobs.work(STRIPE_RECONCILE_QUEUE, {}, async () => {
    await run();
  });
  const cron = reconcileCron(intervalMinutes);
  if (cron) await jobs.schedule(STRIPE_RECONCILE_QUEUE, cron);
  else await jobs.unschedule(STRIPE_RECONCILE_QUEUE);
}
