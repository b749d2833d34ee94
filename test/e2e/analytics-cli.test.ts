import { AnalyticsFixtures, RANGE } from '../helpers/analytics-fixtures.js';
import { runCli } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Each command starts a process loading the whole server: seconds on a busy machine. */
const CLI_TEST_TIMEOUT_MS = 180_000;

/**
 * `tollgate analytics verify [--app] [--repair]` and `tollgate analytics backfill`, run as the operator
 * runs them, against the test database and the test server's Stripe emulator.
 */

let server: TestServer;
let fx: AnalyticsFixtures;

beforeAll(async () => {
  server = await startTestServer();
  fx = new AnalyticsFixtures(server);
});
afterAll(async () => {
  await server.close();
});

const env = () => ({
  DATABASE_URL: process.env.TEST_DATABASE_URL,
  LOG_LEVEL: 'warn',
  STRIPE_API_BASE: server.payments.apiBase!,
});

async function subscribed(unitAmount: number) {
  const { appId, apiKey } = await server.createApp();
  await fx.plan(appId, 'basic', { unitAmount });
  const customerId = await fx.customer(apiKey);
  const subscription = await fx.subscribe(apiKey, customerId, 'basic');
  return { appId, apiKey, customerId, subscription };
}

describe('tollgate analytics verify', () => {
  it(
    'finds an injected difference, and --repair closes it with a correcting movement',
    async () => {
      const { appId, apiKey, customerId, subscription } = await subscribed(1_000);
      // What the subscription counts for changes behind the ledger's back.
      await fx.sql('update subscription set mrr_amount = 1700 where id = ?', [subscription.id]);

      const found = await runCli(['analytics', 'verify', '--app', appId], env());
      expect(found.code).toBe(1);
      expect(found.stderr).toBe(
        'tollgate: 1 difference(s) in the MRR ledger; run again with --repair to close them\n',
      );
      expect(JSON.parse(found.stdout)).toEqual({
        subscriptions: 1,
        differences: [
          {
            appId,
            subjectId: customerId,
            subscriptionId: subscription.id,
            currency: 'usd',
            ledgerMrr: 1_000,
            currentMrr: 1_700,
          },
        ],
        repaired: 0,
      });

      const repaired = await runCli(['analytics', 'verify', '--app', appId, '--repair'], env());
      expect(repaired.stderr).toBe('');
      expect(repaired.code).toBe(0);
      expect(JSON.parse(repaired.stdout)).toMatchObject({ repaired: 1 });

      const again = await runCli(['analytics', 'verify', '--app', appId], env());
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toEqual({ subscriptions: 1, differences: [], repaired: 0 });
      expect((await fx.movements(appId)).at(-1)).toEqual({
        kind: 'expansion',
        cause: 'repair',
        before: 1_000,
        after: 1_700,
        backfilled: true,
      });
      const res = await fx.analytics(apiKey, RANGE());
      expect(res.body.periods.at(-1)).toMatchObject({ mrr: 1_700, activeSubscriptions: 1 });
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'finds a movement lost from the ledger',
    async () => {
      const { appId, subscription } = await subscribed(2_000);
      await fx.sql('delete from mrr_movement where subscription_id = ?', [subscription.id]);
      const found = await runCli(['analytics', 'verify', '--app', appId], env());
      expect(found.code).toBe(1);
      expect(JSON.parse(found.stdout).differences).toEqual([
        expect.objectContaining({ subscriptionId: subscription.id, ledgerMrr: 0, currentMrr: 2_000 }),
      ]);
    },
    CLI_TEST_TIMEOUT_MS,
  );
});

describe('tollgate analytics backfill', () => {
  it(
    'counts a subscription older than the ledger, from Stripe, with one back-filled movement at its start',
    async () => {
      const { appId, apiKey, subscription } = await subscribed(3_000);
      // As a subscription made before the ledger existed: never counted, nothing recorded.
      await fx.sql('delete from mrr_movement where app_id = ?', [appId]);
      await fx.sql('delete from mrr_daily where app_id = ?', [appId]);
      await fx.sql(
        `update subscription set mrr_inputs = null, mrr_amount = 0, mrr_currency = null,
              created_at = now() - interval '40 days' where id = ?`,
        [subscription.id],
      );

      const result = await runCli(['analytics', 'backfill', '--app', appId], env());
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ counted: 1, missingAtStripe: [] });
      expect(await fx.movements(appId)).toEqual([
        { kind: 'new', cause: 'backfill', before: 0, after: 3_000, backfilled: true },
      ]);
      const [row] = await fx.sql<{ day: string }>(
        `select ((occurred_at at time zone 'UTC')::date)::text as day from mrr_movement where app_id = ?`,
        [appId],
      );
      expect(row!.day).toBe(new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 10));
      const res = await fx.analytics(apiKey, RANGE());
      expect(res.body.periods[0]).toMatchObject({ mrr: 3_000, activeSubscriptions: 1 });

      // Run again: nothing left to count.
      const again = await runCli(['analytics', 'backfill', '--app', appId], env());
      expect(JSON.parse(again.stdout)).toEqual({ counted: 0, missingAtStripe: [] });
      const check = await runCli(['analytics', 'verify', '--app', appId], env());
      expect(check.code).toBe(0);
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
