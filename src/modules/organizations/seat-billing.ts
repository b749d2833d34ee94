import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { JobQueue } from '../../infra/job-queue.js';
import type { PaymentProvider } from '../payments/payment-provider.js';
import type { PlanSeats } from '../plans/plan-seats.js';
import { ENTITLING_STATUSES_SQL } from '../subscriptions/subscription.entity.js';

/** The queue of per-seat quantity changes. */
export const SEAT_QUANTITY_QUEUE = 'seat-quantity';

/** Bring the organization's per-seat subscription to its member count, as of membership `version`. */
export interface SeatQuantityJob {
  readonly organizationId: string;
  readonly version: number;
}

/** What a quantity job did: set the quantity, found a later version applied, or found nothing billed per seat. */
export type SeatQuantityOutcome = 'applied' | 'superseded' | 'not_per_seat';

/**
 * Per-seat billing follows membership: every membership change of an organization on a per-seat plan
 * enqueues, in its own transaction, a job that sets the absolute quantity of the plan's subscription
 * item (found by price) to the member count it reads when it runs. The organization's `seatVersion`,
 * raised under its row lock with each change, orders the jobs: one that finds a later version applied
 * does nothing, so jobs run late or out of order never leave an old count. Pending invitations count
 * toward the seat limit, not toward the billed quantity.
 */
export class SeatBilling {
  constructor(
    private readonly orm: MikroORM,
    private readonly jobs: JobQueue,
    private readonly payments: PaymentProvider,
  ) {}

  /** Defines the queue and starts this instance's workers (a serving process). */
  async start(): Promise<void> {
    // A job whose worker died runs again after a minute; retries with back-off while Stripe is away.
    await this.jobs.define(SEAT_QUANTITY_QUEUE, {
      expireInSeconds: 60,
      retryLimit: 10,
      retryDelay: 5,
      retryBackoff: true,
    });
    await this.jobs.work<SeatQuantityJob>(SEAT_QUANTITY_QUEUE, { pollingIntervalSeconds: 0.5 }, (job) =>
      this.applyQuantity(job).then(() => undefined),
    );
  }

  /**
   * Called in a membership change's transaction, under the organization's row lock, when its plan is
   * billed per seat: raises the membership version and enqueues the job that follows it.
   */
  async membershipChanged(em: EntityManager, organizationId: string): Promise<void> {
    const [row] = await em.execute<{ seat_version: number }[]>(
      'update organization set seat_version = seat_version + 1 where id = ? returning seat_version',
      [organizationId],
    );
    await this.jobs.enqueue<SeatQuantityJob>(em, SEAT_QUANTITY_QUEUE, [
      { data: { organizationId, version: row!.seat_version } },
    ]);
  }

  /**
   * Runs one quantity job: under the subscription's row lock (so two jobs never call Stripe for one
   * subscription at once), skips when a later version is applied, else sets the quantity at Stripe
   * (prorated, except during a trial) with an idempotency key carrying the version, then records it.
   */
  async applyQuantity(job: SeatQuantityJob): Promise<SeatQuantityOutcome> {
    return this.orm.em.fork().transactional(async (em) => {
      const [subscription] = await em.execute<
        {
          id: string;
          stripe_subscription_id: string;
          status: string;
          seat_version: number;
          stripe_price_id: string | null;
          seats: PlanSeats | null;
        }[]
      >(
        `select s.id, s.stripe_subscription_id, s.status, s.seat_version, p.stripe_price_id, p.seats
           from subscription s join plan p on p.id = s.plan_id
          where s.organization_id = ? and s.status in (${ENTITLING_STATUSES_SQL})
          order by s.created_at desc, s.id desc limit 1
          for update of s`,
        [job.organizationId],
      );
      if (!subscription?.stripe_price_id || subscription.seats?.mode !== 'per_seat') return 'not_per_seat';
      if (subscription.seat_version >= job.version) return 'superseded';
      const [count] = await em.execute<{ members: number }[]>(
        'select count(*)::int as members from organization_member where organization_id = ?',
        [job.organizationId],
      );
      const quantity = Math.max(subscription.seats.min, count!.members);
      await this.payments.setSubscriptionItemQuantity(
        subscription.stripe_subscription_id,
        {
          priceId: subscription.stripe_price_id,
          quantity,
          prorationBehavior: subscription.status === 'trialing' ? 'none' : 'create_prorations',
        },
        `tollgate-seats-${subscription.id}-${job.version}`,
      );
      await em.execute('update subscription set seat_quantity = ?, seat_version = ? where id = ?', [
        quantity,
        job.version,
        subscription.id,
      ]);
      return 'applied';
    });
  }
}
