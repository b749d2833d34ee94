import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ForbiddenError } from '../../core/errors.js';
import type { Principal } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import { recordMrrChange } from '../analytics/mrr-ledger.js';
import type { PaymentProvider } from '../payments/payment-provider.js';
import { Subscription } from './subscription.entity.js';
import { countedStateOf, countSubscription } from './subscription-mrr.js';

/** What a back-fill did. */
export interface BackfillReport {
  /** Subscriptions counted and given their back-filled movement. */
  readonly counted: number;
  /** Stripe ids of subscriptions Stripe no longer knows (left uncounted). */
  readonly missingAtStripe: readonly string[];
}

/** How many subscriptions one back-fill reads at a time. */
const BATCH = 200;

/**
 * Counts the subscriptions that existed before the MRR ledger (never counted: no `mrr_inputs`): their
 * prices, quantities and coupons are read from Stripe, which a migration cannot reach, and each gets one
 * back-filled movement at its start, as it counts now. Run once after upgrading; running it again counts
 * only what is still uncounted. A live change of such a subscription waits for, or is followed by, its
 * back-fill (both take the row lock; the back-fill skips a row counted meanwhile).
 */
export class SubscriptionMrrBackfillService {
  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
  ) {}

  /** The operator only; `appId` limits it to one app. */
  async backfill(principal: Principal, options: { readonly appId?: string }): Promise<BackfillReport> {
    if (principal.kind !== 'admin')
      throw new ForbiddenError('Only the operator can back-fill the MRR ledger');
    const appId = options.appId === undefined ? undefined : parseInput(idSchema, options.appId);
    let counted = 0;
    const missingAtStripe: string[] = [];
    let after = '';
    for (;;) {
      const batch = await this.orm.em
        .fork()
        .find(
          Subscription,
          { mrrInputs: null, id: { $gt: after }, ...(appId ? { app: appId } : {}) },
          { orderBy: { id: 'asc' }, limit: BATCH, fields: ['id', 'stripeSubscriptionId'] },
        );
      if (batch.length === 0) break;
      after = batch.at(-1)!.id;
      for (const { id, stripeSubscriptionId } of batch) {
        // Read before the transaction: no row lock is held across a network call.
        const remote = await this.payments.retrieveSubscription(stripeSubscriptionId);
        if (!remote) {
          missingAtStripe.push(stripeSubscriptionId);
          continue;
        }
        counted += await this.orm.em.fork().transactional(async (em) => {
          const subscription = await em.findOne(
            Subscription,
            { id, mrrInputs: null },
            { lockMode: LockMode.PESSIMISTIC_WRITE },
          );
          if (!subscription) return 0;
          await em.populate(subscription, ['plan']);
          // Counted in the status Tollgate holds, which its next notification compares with.
          countSubscription(subscription, {
            ...remote,
            status: subscription.status,
            collectionPaused: false,
          });
          // A subscription kept as history of an erased customer has no subject: counted, with no movement.
          await recordMrrChange(em, {
            appId: subscription.app.id,
            subscriptionId: subscription.id,
            customerId: subscription.organization ? null : (subscription.customer?.id ?? null),
            organizationId: subscription.organization?.id ?? null,
            before: { amount: 0, currency: null, status: null, planId: null },
            after: countedStateOf(subscription),
            cause: 'backfill',
            occurredAt: subscription.createdAt,
          });
          return 1;
        });
      }
    }
    return { counted, missingAtStripe };
  }
}
