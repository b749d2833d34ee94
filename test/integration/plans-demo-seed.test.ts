import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Stripe from 'stripe';
import request from 'supertest';
import { loadConfig } from '../../src/config.js';
import { createScratchDatabase, dropDatabase } from '../../src/infra/database-admin.js';
import { createLogger } from '../../src/infra/logger.js';
import { EMULATOR_SECRET_KEY } from '../../src/modules/payments/payments.runtime.js';
import { type RunningServer, startServer } from '../../src/server.js';

/**
 * A first development start on an empty database: the demo app gets a free default plan and a pro plan
 * sold at a real price of the in-process emulator, and that price survives a restart.
 */

const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
const name = `tollgate_seed_${process.pid}_${randomBytes(4).toString('hex')}`;
let databaseUrl: string;
let dataDir: string;

beforeAll(async () => {
  databaseUrl = await createScratchDatabase(serverUrl, name);
  dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-seed-'));
});
afterAll(async () => {
  await dropDatabase(serverUrl, name);
  await rm(dataDir, { recursive: true, force: true });
});

function start(): Promise<RunningServer> {
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    PORT: '0',
    STRIPE_EMULATOR_PORT: '0',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: `tg_admin_seed_${randomBytes(8).toString('hex')}`,
    LOG_LEVEL: 'silent',
  });
  return startServer(config, { seedDemo: true, logger: createLogger('silent') });
}

function sdk(server: RunningServer): Stripe {
  const base = new URL(server.payments.apiBase!);
  return new Stripe(EMULATOR_SECRET_KEY, { host: base.hostname, port: Number(base.port), protocol: 'http' });
}

it('seeds the demo plans with a real emulator price that survives a restart', async () => {
  const first = await start();
  let apiKey: string;
  let priceId: string;
  try {
    expect(first.demo).toBeDefined();
    apiKey = first.demo!.apiKey;
    const res = await request(first.url)
      .post('/graphql')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ query: '{ plans { id name stripePriceId trialDays isDefault features } }' });
    const [free, pro] = res.body.data.plans;
    expect(free).toEqual({
      id: 'free',
      name: 'Free',
      stripePriceId: null,
      trialDays: 0,
      isDefault: true,
      features: { projects: 1, support: 'community' },
    });
    expect(pro).toMatchObject({ id: 'pro', name: 'Pro', trialDays: 14, isDefault: false });
    priceId = pro.stripePriceId;
    const price = await sdk(first).prices.retrieve(priceId);
    expect(price).toMatchObject({ unit_amount: 1900, currency: 'usd', recurring: { interval: 'month' } });
  } finally {
    await first.close();
  }

  const second = await start();
  try {
    expect(second.demo).toBeUndefined();
    expect((await sdk(second).prices.retrieve(priceId)).id).toBe(priceId);
    const checkout = await request(second.url)
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({
        planId: 'pro',
        email: 'demo@example.com',
        successUrl: 'http://localhost:3000/ok',
        cancelUrl: 'http://localhost:3000/no',
      });
    expect(checkout.status).toBe(200);
  } finally {
    await second.close();
  }
});
