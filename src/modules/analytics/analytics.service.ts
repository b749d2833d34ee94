import type { MikroORM } from '@mikro-orm/postgresql';
import { ValidationError } from '../../core/errors.js';
import { type AppScope, type Principal, requireApiKey } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { actingOnApp } from '../apps/app-rules.js';
import { type AnalyticsInterval, analyticsQuerySchema } from './analytics.schemas.js';
import { MRR_DEFINITIONS } from './mrr-rules.js';

/** The movement figures of a period or a range (amounts in the currency's smallest unit). */
export interface MovementTotals {
  readonly newMrr: number;
  readonly expansionMrr: number;
  readonly contractionMrr: number;
  readonly churnedMrr: number;
  readonly reactivationMrr: number;
  readonly newSubscriptions: number;
  readonly canceledSubscriptions: number;
  readonly trialConversions: number;
}

export interface AnalyticsPeriod extends MovementTotals {
  /** The period's first day in the range (`YYYY-MM-DD`). */
  readonly start: string;
  /** At the period's end. */
  readonly mrr: number;
  readonly activeSubscriptions: number;
  readonly trialingSubscriptions: number;
}

export interface Analytics {
  readonly currency: string | null;
  readonly interval: AnalyticsInterval;
  readonly periods: readonly AnalyticsPeriod[];
  readonly totals: MovementTotals;
  /** At the range's end, by plan (its public id), plans with MRR or paying subscriptions only. */
  readonly byPlan: ReadonlyArray<{
    readonly planId: string;
    readonly mrr: number;
    readonly activeSubscriptions: number;
  }>;
  readonly definitions: typeof MRR_DEFINITIONS;
}

/** How many periods one answer may hold (ten years by month, about three by day). */
const MAX_PERIODS = 1200;

const DAY_MS = 86_400_000;

const ZERO: MovementTotals = {
  newMrr: 0,
  expansionMrr: 0,
  contractionMrr: 0,
  churnedMrr: 0,
  reactivationMrr: 0,
  newSubscriptions: 0,
  canceledSubscriptions: 0,
  trialConversions: 0,
};

interface DayRow {
  day: string;
  mrr_delta: string;
  active_delta: string;
  trialing_delta: string;
  new_mrr: string;
  expansion_mrr: string;
  contraction_mrr: string;
  churned_mrr: string;
  reactivation_mrr: string;
  new_subscriptions: string;
  canceled_subscriptions: string;
  trial_conversions: string;
}

/** Subscription analytics of an app, read from its MRR ledger's daily totals. */
export class AnalyticsService {
  constructor(private readonly orm: MikroORM) {}

  /**
   * `GET /v1/analytics` / `analytics`: MRR, subscription counts and movements per period of
   * `[from, to]` (UTC days, both inclusive) in one currency, which must be named when the app has
   * several. A period's MRR and counts are at its end; `byPlan` at the range's end.
   */
  async getAnalytics(principal: Principal, query: unknown, scope?: AppScope): Promise<Analytics> {
    const { appId } = requireApiKey(await actingOnApp(this.orm.em, principal, scope));
    const input = parseInput(analyticsQuerySchema, query);
    if (input.from > input.to) throw ValidationError.forField('from', 'must not be after to');
    const periods = periodsOf(input.from, input.to, input.interval);
    if (periods.length > MAX_PERIODS) {
      throw ValidationError.forField('interval', `gives more than ${MAX_PERIODS} periods for this range`);
    }
    const run = <T>(sql: string, params: unknown[]) =>
      this.orm.em.getConnection().execute<T[]>(sql, params, 'all');
    const currency = input.currency ?? (await this.#onlyCurrency(appId, run));
    const sums = `coalesce(sum(mrr_delta), 0)::text as mrr_delta, coalesce(sum(active_delta), 0)::text as active_delta,
      coalesce(sum(trialing_delta), 0)::text as trialing_delta, coalesce(sum(new_mrr), 0)::text as new_mrr,
      coalesce(sum(expansion_mrr), 0)::text as expansion_mrr, coalesce(sum(contraction_mrr), 0)::text as contraction_mrr,
      coalesce(sum(churned_mrr), 0)::text as churned_mrr, coalesce(sum(reactivation_mrr), 0)::text as reactivation_mrr,
      coalesce(sum(new_subscriptions), 0)::text as new_subscriptions,
      coalesce(sum(canceled_subscriptions), 0)::text as canceled_subscriptions,
      coalesce(sum(trial_conversions), 0)::text as trial_conversions`;
    const [[opening], days, plans] = await Promise.all([
      run<DayRow>(`select ${sums} from mrr_daily where app_id = ? and currency = ? and day < ?::date`, [
        appId,
        currency,
        input.from,
      ]),
      run<DayRow>(
        `select day::text as day, ${sums} from mrr_daily
          where app_id = ? and currency = ? and day between ?::date and ?::date group by day order by day`,
        [appId, currency, input.from, input.to],
      ),
      run<{ plan_id: string; mrr: string; active: string }>(
        `select plan_id, sum(mrr_delta)::text as mrr, sum(active_delta)::text as active from mrr_daily
          where app_id = ? and currency = ? and day <= ?::date group by plan_id
         having sum(mrr_delta) <> 0 or sum(active_delta) <> 0 order by sum(mrr_delta) desc, plan_id`,
        [appId, currency, input.to],
      ),
    ]);
    let mrr = Number(opening!.mrr_delta);
    let active = Number(opening!.active_delta);
    let trialing = Number(opening!.trialing_delta);
    let next = 0;
    const totals = { ...ZERO };
    const answer: AnalyticsPeriod[] = periods.map((period) => {
      const moved = { ...ZERO };
      while (next < days.length && days[next]!.day <= period.end) {
        const day = days[next++]!;
        mrr += Number(day.mrr_delta);
        active += Number(day.active_delta);
        trialing += Number(day.trialing_delta);
        add(moved, day);
      }
      add(totals, moved);
      return {
        start: period.start,
        mrr,
        activeSubscriptions: active,
        trialingSubscriptions: trialing,
        ...moved,
      };
    });
    return {
      currency,
      interval: input.interval,
      periods: answer,
      totals,
      byPlan: plans.map((p) => ({
        planId: p.plan_id,
        mrr: Number(p.mrr),
        activeSubscriptions: Number(p.active),
      })),
      definitions: MRR_DEFINITIONS,
    };
  }

  /** The currencies the app has MRR movements in, alphabetically (for a currency picker). */
  async listCurrencies(principal: Principal, scope?: AppScope): Promise<string[]> {
    const { appId } = requireApiKey(await actingOnApp(this.orm.em, principal, scope));
    const rows = await this.orm.em
      .getConnection()
      .execute<{ currency: string }[]>(
        'select distinct currency from mrr_daily where app_id = ? order by currency',
        [appId],
      );
    return rows.map((r) => r.currency);
  }

  /** The app's one currency; null when it has none yet; several → 400 naming them. */
  async #onlyCurrency(
    appId: string,
    run: <T>(sql: string, params: unknown[]) => Promise<T[]>,
  ): Promise<string | null> {
    const rows = await run<{ currency: string }>(
      'select distinct currency from mrr_daily where app_id = ? order by currency',
      [appId],
    );
    if (rows.length > 1) {
      throw ValidationError.forField(
        'currency',
        `required when the app has MRR in several currencies (${rows.map((r) => r.currency).join(', ')})`,
      );
    }
    return rows[0]?.currency ?? null;
  }
}

function add(into: { -readonly [K in keyof MovementTotals]: number }, from: MovementTotals | DayRow): void {
  const value = (v: number | string) => Number(v);
  if ('day' in from) {
    into.newMrr += value(from.new_mrr);
    into.expansionMrr += value(from.expansion_mrr);
    into.contractionMrr += value(from.contraction_mrr);
    into.churnedMrr += value(from.churned_mrr);
    into.reactivationMrr += value(from.reactivation_mrr);
    into.newSubscriptions += value(from.new_subscriptions);
    into.canceledSubscriptions += value(from.canceled_subscriptions);
    into.trialConversions += value(from.trial_conversions);
    return;
  }
  for (const key of Object.keys(ZERO) as (keyof MovementTotals)[]) into[key] += from[key];
}

/**
 * The periods of `[from, to]`: calendar days, ISO weeks (from Monday) or calendar months, the first and
 * the last cut to the range. Each with its first and last day in the range.
 */
export function periodsOf(
  from: string,
  to: string,
  interval: AnalyticsInterval,
): Array<{ start: string; end: string }> {
  const last = Date.parse(`${to}T00:00:00Z`);
  const periods: Array<{ start: string; end: string }> = [];
  let start = Date.parse(`${from}T00:00:00Z`);
  while (start <= last && periods.length <= MAX_PERIODS) {
    const date = new Date(start);
    let nextStart: number;
    if (interval === 'day') nextStart = start + DAY_MS;
    else if (interval === 'week') nextStart = start + (7 - ((date.getUTCDay() + 6) % 7)) * DAY_MS;
    else nextStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
    const end = Math.min(nextStart - DAY_MS, last);
    periods.push({ start: isoDay(start), end: isoDay(end) });
    start = nextStart;
  }
  return periods;
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
