import Stripe from 'stripe';
import { eventually } from '../helpers/eventually.js';
import { runCli, startCli } from '../helpers/process.js';

/** The payments commands of the CLI: the standalone Stripe emulator and `plans upsert`. */

const env = {
  DATABASE_URL: process.env.TEST_DATABASE_URL,
  LOG_LEVEL: 'silent',
  STRIPE_WEBHOOK_SECRET: 'whsec_cli_test_secret',
};

async function createApp(): Promise<string> {
  const res = await runCli(['apps', 'create', '--name', 'CLI plans'], env);
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout).appId;
}

describe('tollgate CLI: payments', () => {
  it('upserts a plan from the command line and prints it as JSON', async () => {
    const appId = await createApp();
    const res = await runCli(
      [
        'plans',
        'upsert',
        '--app',
        appId,
        '--id',
        'pro',
        '--name',
        'Pro',
        '--trial-days',
        '7',
        '--features',
        '{"projects":10}',
        '--default',
      ],
      env,
    );
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({
      id: 'pro',
      name: 'Pro',
      stripePriceId: null,
      trialDays: 7,
      features: { projects: 10 },
      isDefault: true,
    });
    const bad = await runCli(['plans', 'upsert', '--app', appId, '--id', 'Bad Id', '--name', 'X'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^tollgate: id: must be 1 to 63 lowercase letters/);
  });

  it('runs the emulator on its own, and `plans upsert --amount` creates the price in it', async () => {
    const emulator = startCli(['stripe-emulator', '--port', '0'], env);
    try {
      const url = await eventually(
        () => {
          if (emulator.child.exitCode !== null)
            throw new Error(`the emulator exited: ${emulator.output.stderr}`);
          return /Stripe emulator\s+(http:\/\/\S+)/.exec(emulator.output.stdout)?.[1];
        },
        { what: 'the emulator to print its address', timeoutMs: 20_000 },
      );
      expect(emulator.output.stdout).toContain('Webhook secret    whsec_cli_test_secret');
      const base = new URL(url);
      const stripe = new Stripe('sk_test_cli', {
        host: base.hostname,
        port: Number(base.port),
        protocol: 'http',
      });
      expect((await stripe.customers.create({ email: 'cli@example.com' })).id).toMatch(/^cus_/);

      const appId = await createApp();
      const res = await runCli(
        ['plans', 'upsert', '--app', appId, '--id', 'team', '--name', 'Team', '--amount', '4900'],
        {
          ...env,
          STRIPE_API_BASE: url,
        },
      );
      expect(res.code).toBe(0);
      const plan = JSON.parse(res.stdout);
      const price = await stripe.prices.retrieve(plan.stripePriceId);
      expect(price).toMatchObject({ unit_amount: 4900, currency: 'usd', recurring: { interval: 'month' } });

      // `--price` names an existing price, checked at the provider before the plan is saved.
      const withPrice = await runCli(
        ['plans', 'upsert', '--app', appId, '--id', 'solo', '--name', 'Solo', '--price', price.id],
        { ...env, STRIPE_API_BASE: url },
      );
      expect(withPrice.code).toBe(0);
      expect(JSON.parse(withPrice.stdout)).toMatchObject({ id: 'solo', stripePriceId: price.id });
      const unknown = await runCli(
        [
          'plans',
          'upsert',
          '--app',
          appId,
          '--id',
          'solo',
          '--name',
          'Solo',
          '--price',
          'price_doesnotexist',
        ],
        { ...env, STRIPE_API_BASE: url },
      );
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe(
        'tollgate: stripePriceId: no such price at the payment provider: price_doesnotexist\n',
      );
    } finally {
      emulator.child.kill('SIGTERM');
      expect(await emulator.exited).toBe(0);
    }
    // Five CLI processes, each a Node start: slow on a busy machine.
  }, 90_000);
});
