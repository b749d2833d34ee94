import fc from 'fast-check';
import type { ApiKeyPrincipal } from '../../src/core/principal.js';
import { type CountedState, recordMrrChange } from '../../src/modules/analytics/mrr-ledger.js';
import type { MovementCause } from '../../src/modules/analytics/mrr-movement.entity.js';
import { movementKind, movementKindSql } from '../../src/modules/analytics/mrr-rules.js';
import { type ServiceCore, startServices } from '../helpers/services.js';

/**
 * The ledger's invariant, on random sequences of changes of several subscriptions of several subjects
 * in two currencies, recorded on the test database and read back through AnalyticsService: per currency,
 * MRR at the start of a range plus the sum of its movements is MRR at its end, exactly; and MRR at any
 * day's end is what the subscriptions counted for then.
 */

let core: ServiceCore;

beforeAll(async () => {
  core = await startServices();
});
afterAll(async () => {
  await core.close();
});

const DAY_MS = 86_400_000;
const START = Date.parse('2026-01-01T00:00:00Z');
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const STATUSES = ['trialing', 'active', 'past_due', 'paused', 'unpaid', 'canceled'] as const;
const CAUSES: MovementCause[] = ['notification', 'plan_change', 'pause', 'resume', 'cancel'];

/** One change: which subscription, its state after, and how long after the previous change it happens. */
const changeArb = fc.record({
  subscription: fc.integer({ min: 0, max: 4 }),
  status: fc.constantFrom(...STATUSES),
  listAmount: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 250_000 })),
  currency: fc.oneof(
    { weight: 5, arbitrary: fc.constant('usd') },
    { weight: 1, arbitrary: fc.constant('eur') },
  ),
  plan: fc.constantFrom('basic', 'pro', 'team'),
  afterMs: fc.integer({ min: 0, max: 9 * DAY_MS }),
  cause: fc.constantFrom(...CAUSES),
});

const rangeArb = fc.record({
  fromDay: fc.integer({ min: 0, max: 120 }),
  days: fc.integer({ min: 0, max: 120 }),
  interval: fc.constantFrom('day', 'week', 'month'),
});

/** Subscriptions 0–4 belong to three subjects: two customers and an organization. */
const owners = [
  { customerId: 'cus_a', organizationId: null },
  { customerId: 'cus_a', organizationId: null },
  { customerId: 'cus_b', organizationId: null },
  { customerId: null, organizationId: 'org_c' },
  { customerId: 'cus_b', organizationId: null },
];

describe('the MRR ledger invariant', () => {
  it('start MRR + the movements of any range = end MRR, per currency, exactly', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(changeArb, { minLength: 1, maxLength: 25 }),
        fc.array(rangeArb, { minLength: 1, maxLength: 4 }),
        async (changes, ranges) => {
          const { principal } = await core.createApp();
          // What each subscription counts for, and the history of that as (time, currency, amount) states.
          const state = new Map<number, CountedState & { planId: string }>();
          const history: Array<{ at: number; amounts: Map<number, { currency: string; amount: number }> }> =
            [];
          let at = START;
          for (const change of changes) {
            at += change.afterMs;
            const before = state.get(change.subscription) ?? {
              amount: 0,
              currency: null,
              status: null,
              planId: null,
            };
            const counts = change.status === 'active' || change.status === 'past_due';
            const after = {
              amount: counts ? change.listAmount : 0,
              currency: change.currency,
              status: change.status,
              planId: change.plan,
            };
            await core.deps.orm.em.fork().transactional((em) =>
              recordMrrChange(em, {
                appId: principal.appId,
                subscriptionId: `sub_${change.subscription}`,
                ...owners[change.subscription]!,
                before,
                after,
                cause: change.cause,
                occurredAt: new Date(at),
              }),
            );
            state.set(change.subscription, after);
            history.push({
              at,
              amounts: new Map([...state].map(([k, v]) => [k, { currency: v.currency!, amount: v.amount }])),
            });
          }
          const mrrAt = (endOfDay: number, currency: string) => {
            const last = history.filter((h) => h.at < endOfDay).at(-1);
            if (!last) return 0;
            return [...last.amounts.values()]
              .filter((a) => a.currency === currency)
              .reduce((s, a) => s + a.amount, 0);
          };
          for (const range of ranges) {
            const from = START + range.fromDay * DAY_MS;
            const to = from + range.days * DAY_MS;
            for (const currency of ['usd', 'eur']) {
              const read = (query: Record<string, string>) =>
                core.run(() =>
                  core.services.analytics.getAnalytics(principal as ApiKeyPrincipal, { ...query, currency }),
                );
              const opening = await read({
                from: isoDay(from - DAY_MS),
                to: isoDay(from - DAY_MS),
                interval: 'day',
              });
              const answer = await read({ from: isoDay(from), to: isoDay(to), interval: range.interval });
              const start = opening.periods[0]!.mrr;
              const t = answer.totals;
              const end = answer.periods.at(-1)!.mrr;
              expect(
                start + t.newMrr + t.expansionMrr + t.reactivationMrr - t.contractionMrr - t.churnedMrr,
              ).toBe(end);
              expect(start).toBe(mrrAt(from, currency));
              expect(end).toBe(mrrAt(to + DAY_MS, currency));
              // Period by period as well.
              let previous = start;
              for (const p of answer.periods) {
                const moved = p.newMrr + p.expansionMrr + p.reactivationMrr - p.contractionMrr - p.churnedMrr;
                expect(previous + moved).toBe(p.mrr);
                previous = p.mrr;
              }
            }
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('judges kinds in SQL exactly as the rules module does', async () => {
    const amounts = [0, 1, 100, 250];
    for (const before of amounts)
      for (const after of amounts)
        for (const counted of [false, true]) {
          const [row] = await core.deps.orm.em.getConnection().execute<{ kind: string | null }[]>(
            `select ${movementKindSql('t.b', 't.a', 't.c')} as kind
                 from (select ?::bigint as b, ?::bigint as a, ?::boolean as c) t`,
            [before, after, counted],
          );
          expect([before, after, counted, row!.kind]).toEqual([
            before,
            after,
            counted,
            movementKind(before, after, counted),
          ]);
        }
  });

  it("records movements through a database function whose kind is the rules module's SQL, to the letter", async () => {
    const [row] = await core.deps.orm.em
      .getConnection()
      .execute<{ source: string }[]>(
        `select prosrc as source from pg_proc where proname = 'tollgate_record_mrr_movement'`,
      );
    const squeeze = (text: string) => text.replace(/\s+/g, ' ');
    expect(squeeze(row!.source)).toContain(
      squeeze(`${movementKindSql('s.mrr', "s.mrr + (v.j->>'delta')::bigint", 's.counted')} as kind`),
    );
  });
});
