import { ConfigError, loadConfig } from '../../src/config.js';
import { reconcileCron } from '../../src/modules/subscriptions/subscription-reconcile.jobs.js';

/** STRIPE_RECONCILE_INTERVAL_MINUTES as the cron schedule of the periodic reconcile. */
describe('the reconcile interval', () => {
  it('turns intervals that divide an hour or a day into cron, and 0 into no schedule', () => {
    expect(reconcileCron(0)).toBeNull();
    expect(reconcileCron(15)).toBe('*/15 * * * *');
    expect(reconcileCron(60)).toBe('0 */1 * * *');
    expect(reconcileCron(360)).toBe('0 */6 * * *');
    expect(reconcileCron(1440)).toBe('0 0 * * *');
  });

  it('defaults to six hours and refuses an interval cron cannot keep without drifting', () => {
    expect(loadConfig({}).stripe.reconcileIntervalMinutes).toBe(360);
    expect(loadConfig({ STRIPE_RECONCILE_INTERVAL_MINUTES: '30' }).stripe.reconcileIntervalMinutes).toBe(30);
    for (const bad of ['7', '90', '300', '1441', '-1', 'often']) {
      expect(() => loadConfig({ STRIPE_RECONCILE_INTERVAL_MINUTES: bad })).toThrow(ConfigError);
    }
  });
});
