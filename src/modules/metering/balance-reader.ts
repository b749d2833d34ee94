import type { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import type { Clock } from '../../core/clock.js';
import type { SessionPrincipal } from '../../core/principal.js';
import { withPooledClient } from '../../infra/prepared-statement.js';
import { inTransaction } from '../../infra/unit-of-work.js';
import { type MeteredFeature, periodAt } from '../plans/metered-feature.js';
import type { BillingContext } from '../subscriptions/billing-context.js';
import type { BalanceCache } from './balance-cache.js';
import { type Balance, ledger, type Meter, type Subject } from './ledger.js';

/** A context's metered plan features, as the entitlement cache keeps them. */
export interface MeteredPlan {
  readonly metered: Readonly<Record<string, MeteredFeature>>;
  readonly billingAnchor: Date | null;
}

/** Whose balance a context is; in a session's organization context the member is recorded as consumer. */
export function subjectOf(context: BillingContext, session?: SessionPrincipal): Subject {
  return context.organizationId !== undefined
    ? {
        appId: context.appId,
        subjectId: context.organizationId,
        customerId: session?.customerId ?? null,
        organizationId: context.organizationId,
      }
    : {
        appId: context.appId,
        subjectId: context.customerId,
        customerId: context.customerId,
        organizationId: null,
      };
}

/** The metered feature `feature` of a plan in the period `now` falls in; none when it is not metered. */
export function meterOf(plan: MeteredPlan, feature: string, now: Date): Meter | null {
  const definition = Object.hasOwn(plan.metered, feature) ? plan.metered[feature]! : null;
  if (definition === null) return null;
  return { feature, definition, period: periodAt(definition.reset, now, plan.billingAnchor) };
}

/** Live balances of an authorized context (used by the entitlement check and the metering service). */
export class BalanceReader {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    /** The `pg` pool under the ORM: a read outside a transaction runs its prepared statements there. */
    private readonly pool: () => Promise<pg.Pool>,
    /** Where reads outside a transaction are kept (none: each reads the database). */
    private readonly cache?: BalanceCache,
  ) {}

  #pool: Promise<pg.Pool> | undefined;

  /** Every metered feature's balance, in the plan's order. */
  async all(context: BillingContext, plan: MeteredPlan): Promise<readonly Balance[]> {
    const now = this.clock.now();
    const meters = Object.keys(plan.metered).map((f) => meterOf(plan, f, now)!);
    return this.#read(subjectOf(context), meters, now);
  }

  /** One metered feature's balance; null when the plan does not meter it. */
  async one(context: BillingContext, plan: MeteredPlan, feature: string): Promise<Balance | null> {
    const now = this.clock.now();
    const meter = meterOf(plan, feature, now);
    if (meter === null) return null;
    const [balance] = await this.#read(subjectOf(context), [meter], now);
    return balance!;
  }

  /**
   * Inside a transaction the ORM's connection (it may read the caller's own writes), else the cache,
   * which reads on the pool's.
   */
  async #read(subject: Subject, meters: readonly Meter[], now: Date): Promise<readonly Balance[]> {
    if (inTransaction(this.orm.em)) return ledger.balances(this.orm.em, subject, meters, now);
    const read = async () => {
      this.#pool ??= this.pool();
      return withPooledClient(await this.#pool, (client) =>
        ledger.balancesUntil(client, subject, meters, now),
      );
    };
    if (!this.cache) return (await read()).balances;
    return this.cache.get(subject.subjectId, cacheKey(subject, meters), now.getTime(), read);
  }

  /** A committed consumption or refund of the subject (see BalanceCache.changed). */
  changed(subjectId: string): Promise<void> {
    return this.cache?.changed(subjectId) ?? Promise.resolve();
  }
}

/** What a balance read depends on besides the subject's buckets: each meter's feature, definition and period. */
function cacheKey(subject: Subject, meters: readonly Meter[]): string {
  let key = subject.subjectId;
  for (const { feature, definition, period } of meters) {
    key += `\n${feature} ${definition.limit} ${definition.rollover?.max ?? '-'} ${period.end.getTime()} ${
      period.previous?.end.getTime() ?? '-'
    }`;
  }
  return key;
}
