import type { EntityManager } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ForbiddenError } from '../../core/errors.js';
import type { Principal } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import { APP_LEDGER_LOCK, recordMrrChange } from './mrr-ledger.js';

/** A subscription whose movements do not add up to what it counts for now. */
export interface LedgerDifference {
  readonly appId: string;
  readonly subjectId: string;
  readonly subscriptionId: string;
  readonly currency: string;
  /** The sum of its movements in the currency. */
  readonly ledgerMrr: number;
  /** What it counts for now (0 in a currency it no longer bills in). */
  readonly currentMrr: number;
}

export interface VerificationReport {
  readonly subscriptions: number;
  readonly differences: readonly LedgerDifference[];
  /** The correcting movements appended (with `--repair`). */
  readonly repaired: number;
}

interface DifferenceRow {
  app_id: string;
  subject_id: string | null;
  customer_id: string | null;
  organization_id: string | null;
  subscription_id: string;
  currency: string;
  ledger: string;
  current: string;
  status: string | null;
  plan: string | null;
}

/**
 * `tollgate analytics verify`: compares, subscription by subscription, the MRR its movements add up to
 * with what it counts for now (the amount it was last counted with), and lists the differences; with
 * `repair`, appends one correcting movement per difference (history is never rewritten), taking each
 * app's ledger lock so no live recording of the app runs meanwhile.
 */
export class MrrVerificationService {
  constructor(private readonly orm: MikroORM) {}

  /** The operator only; `appId` limits it to one app. */
  async verify(
    principal: Principal,
    options: { readonly appId?: string; readonly repair?: boolean },
  ): Promise<VerificationReport> {
    if (principal.kind !== 'admin') throw new ForbiddenError('Only the operator can verify the MRR ledger');
    const appId = options.appId === undefined ? undefined : parseInput(idSchema, options.appId);
    const em = this.orm.em.fork();
    const [{ count }] = (await em
      .getConnection()
      .execute(
        `select count(*)::int as count from subscription where mrr_currency is not null${appId ? ' and app_id = ?' : ''}`,
        appId ? [appId] : [],
      )) as [{ count: number }];
    const found = await differences(em, appId);
    let repaired = 0;
    if (options.repair) {
      for (const app of new Set(found.map((d) => d.app_id))) {
        repaired += await em.fork().transactional(async (tx) => {
          await tx
            .getConnection()
            .execute(
              'select pg_advisory_xact_lock(?, hashtext(?))',
              [APP_LEDGER_LOCK, app],
              'all',
              tx.getTransactionContext(),
            );
          // Read again under the lock: recordings that committed meanwhile may have closed some.
          const rows = await differences(tx, app);
          for (const row of rows) {
            const subjectId = row.organization_id ?? row.customer_id ?? row.subject_id;
            if (subjectId === null || row.plan === null) continue;
            const state = { currency: row.currency, status: row.status, planId: row.plan };
            await recordMrrChange(tx, {
              appId: row.app_id,
              subscriptionId: row.subscription_id,
              customerId: row.organization_id ? null : subjectId,
              organizationId: row.organization_id,
              before: { ...state, amount: Number(row.ledger) },
              after: { ...state, amount: Number(row.current) },
              cause: 'repair',
            });
          }
          return rows.length;
        });
      }
    }
    return {
      subscriptions: count,
      differences: found.map((d) => ({
        appId: d.app_id,
        subjectId: d.organization_id ?? d.customer_id ?? d.subject_id ?? '',
        subscriptionId: d.subscription_id,
        currency: d.currency,
        ledgerMrr: Number(d.ledger),
        currentMrr: Number(d.current),
      })),
      repaired,
    };
  }
}

/** Subscriptions whose movements in a currency add up to something else than they count for now. */
function differences(em: EntityManager, appId: string | undefined): Promise<DifferenceRow[]> {
  const where = appId ? 'and s.app_id = ?' : '';
  const whereLedger = appId ? 'and m.app_id = ?' : '';
  return em.getConnection().execute<DifferenceRow[]>(
    `with current as (
       select s.id, s.app_id, s.customer_id, s.organization_id, s.mrr_currency as currency, s.mrr_amount as amount,
              s.status, p.slug as plan
         from subscription s join plan p on p.id = s.plan_id
        where s.mrr_currency is not null ${where}
     ), ledger as (
       select m.subscription_id, m.app_id, m.currency, sum(m.mrr_after - m.mrr_before) as amount,
              max(m.subject_id) as subject_id
         from mrr_movement m where true ${whereLedger}
        group by m.subscription_id, m.app_id, m.currency
     )
     select coalesce(c.app_id, l.app_id) as app_id, l.subject_id,
            coalesce(c.customer_id, s.customer_id) as customer_id,
            coalesce(c.organization_id, s.organization_id) as organization_id,
            coalesce(c.id, l.subscription_id) as subscription_id, coalesce(c.currency, l.currency) as currency,
            coalesce(l.amount, 0)::text as ledger, coalesce(c.amount, 0)::text as current,
            coalesce(c.status, s.status) as status, coalesce(c.plan, p.slug) as plan
       from current c
       full join ledger l on l.subscription_id = c.id and l.currency = c.currency
       left join subscription s on s.id = l.subscription_id
       left join plan p on p.id = s.plan_id
      where coalesce(l.amount, 0) <> coalesce(c.amount, 0)
      order by 1, 5, 6`,
    appId ? [appId, appId] : [],
    'all',
    em.getTransactionContext(),
  );
}
