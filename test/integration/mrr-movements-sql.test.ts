import { isDeepStrictEqual } from 'node:util';
import { type MrrChange, mrrMovements } from '../../src/modules/analytics/mrr-ledger.js';
import type { MovementCause } from '../../src/modules/analytics/mrr-movement.entity.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The Stripe receiver's function works out a notification's MRR movements in SQL
 * (`tollgate_mrr_movements`, src/modules/analytics/mrr-movements-sql.ts); every other path uses the
 * JavaScript rule (`mrrMovements`). Here both work out the same changes, every combination of statuses,
 * amounts, currencies, plans and owners below, and must give the same values (the ids aside, drawn by
 * each).
 */
describe('the ledger’s movement rule in SQL', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const statuses = [null, 'active', 'past_due', 'trialing', 'canceled', 'unpaid', 'incomplete_expired'];
  const amounts = [0, 1000, 2500];
  const currencies: Array<[string | null, string | null]> = [
    [null, 'usd'],
    ['usd', 'usd'],
    ['usd', 'eur'],
    ['usd', null],
    [null, null],
  ];
  const plans: Array<[string | null, string]> = [
    [null, 'basic'],
    ['basic', 'basic'],
    ['basic', 'pro'],
  ];
  const owners = [
    { customerId: 'cus_a', organizationId: null },
    { customerId: null, organizationId: 'org_a' },
    { customerId: null, organizationId: null },
  ];

  const changes: MrrChange[] = [];
  for (const statusBefore of statuses)
    for (const statusAfter of statuses.slice(1))
      for (const amountBefore of amounts)
        for (const amountAfter of amounts)
          for (const [currencyBefore, currencyAfter] of currencies)
            for (const [planBefore, planAfter] of plans)
              for (const owner of owners)
                changes.push({
                  appId: 'app_a',
                  subscriptionId: 'sub_a',
                  ...owner,
                  before: {
                    amount: amountBefore,
                    currency: currencyBefore,
                    status: statusBefore,
                    planId: planBefore,
                  },
                  after: {
                    amount: amountAfter,
                    currency: currencyAfter,
                    status: statusAfter,
                    planId: planAfter,
                  },
                  cause: 'notification',
                });
  // The causes and times other paths record with.
  for (const cause of ['backfill', 'repair', 'plan_change'] as MovementCause[])
    changes.push({ ...changes[1_000]!, cause, occurredAt: new Date('2026-03-04T05:06:07.089Z') });

  /** A movement as it reaches PostgreSQL (through JSON), without its id. */
  const withoutId = (values: Record<string, unknown>) => {
    const { id: _id, ...rest } = JSON.parse(JSON.stringify(values)) as Record<string, unknown>;
    return rest;
  };

  it(`gives the values the JavaScript rule gives, over ${changes.length} changes`, async () => {
    const sent = changes.map((change) => ({
      ...change,
      occurredAt: change.occurredAt?.toISOString(),
      ids: ['mrr_first', 'mrr_second'],
    }));
    const rows = await server.deps.orm.em
      .fork()
      .getConnection()
      .execute<{ movements: Record<string, unknown>[] }[]>(
        `select tollgate_mrr_movements(c.value) as movements
           from jsonb_array_elements(?::jsonb) with ordinality as c(value, n) order by c.n`,
        [JSON.stringify(sent)],
      );
    expect(rows).toHaveLength(changes.length);
    let moved = 0;
    let twice = 0;
    for (const [i, change] of changes.entries()) {
      const expected = mrrMovements(change).map(withoutId);
      const actual = rows[i]!.movements.map(withoutId);
      if (!isDeepStrictEqual(actual, expected))
        expect({ change, actual }).toEqual({ change, actual: expected });
      moved += expected.length > 0 ? 1 : 0;
      twice += expected.length === 2 ? 1 : 0;
    }
    // The grid reaches every shape of the rule: none, one, and two (a change of currency).
    expect(moved).toBeGreaterThan(1_000);
    expect(twice).toBeGreaterThan(100);
    expect(moved).toBeLessThan(changes.length);
  });
});
