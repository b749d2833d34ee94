import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { eventually } from '../helpers/eventually.js';
import { startCli } from '../helpers/process.js';
import { RELAXED_DATABASE_TIMEOUTS, startTestServer, type TestServer } from '../helpers/server.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Nothing committed is lost: a real Tollgate process records an event, starts delivering it, and is
 * killed (SIGKILL) before the receiver has answered. Another instance on the same database and job
 * queue then delivers the event, with the same webhook-id, once the dead process's claim has expired.
 */

let receiver: WebhookReceiver;
let dataDir: string;
let successor: TestServer | undefined;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-webhooks-'));
});
afterAll(async () => {
  await successor?.close();
  await receiver.close();
  await rm(dataDir, { recursive: true, force: true });
});

it('delivers an event after the process that committed it was killed mid-delivery', async () => {
  const schema = `jobs_${randomBytes(6).toString('hex')}`;
  const adminToken = `tg_admin_${randomBytes(16).toString('hex')}`;
  const proc = startCli(['serve'], {
    ...RELAXED_DATABASE_TIMEOUTS,
    DATABASE_URL: process.env.TEST_DATABASE_URL,
    ADMIN_TOKEN: adminToken,
    PORT: '0',
    STRIPE_EMULATOR_PORT: '0',
    DATA_DIR: dataDir,
    JOB_QUEUE_SCHEMA: schema,
    LOG_LEVEL: 'warn',
  });
  let killed = false;
  try {
    const base = await eventually(
      () => {
        if (proc.child.exitCode !== null) throw new Error(`serve exited: ${proc.output.stderr}`);
        return /REST API\s+(http:\/\/\S+)\/v1/.exec(proc.output.stdout)?.[1];
      },
      { what: 'the banner', timeoutMs: 30_000 },
    );
    const created = await request(base)
      .post('/graphql')
      .set('authorization', `Bearer ${adminToken}`)
      .send({ query: 'mutation { createApp(input: { name: "killed" }) { apiKey } }' });
    const apiKey = created.body.data.createApp.apiKey as string;
    const endpoint = await request(base)
      .post('/v1/webhook-endpoints')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ url: `${receiver.url}/killed`, events: ['customer.created'] });
    expect(endpoint.status).toBe(201);

    // The receiver takes the first attempt and never answers: the process is mid-delivery when killed.
    receiver.hold = true;
    const customer = await request(base)
      .post('/v1/customers')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ email: 'survivor@example.com' });
    expect(customer.status).toBe(201);
    const first = await eventually(() => receiver.received.find((r) => r.path === '/killed'), {
      what: 'the first attempt',
    });
    proc.child.kill('SIGKILL');
    killed = true;
    await proc.exited;
    receiver.hold = false;

    successor = await startTestServer({
      env: { JOB_QUEUE_SCHEMA: schema, JOB_QUEUE_SUPERVISE_INTERVAL_SECONDS: '1' },
    });
    // The dead process's claim expires after 30 s; then a supervision pass hands the job back.
    const second = await eventually(() => receiver.received.filter((r) => r.path === '/killed')[1], {
      what: 'the delivery after the restart',
      timeoutMs: 60_000,
    });
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.payload.data).toEqual(customer.body);
    expect(verify(endpoint.body.secret, second)).toEqual(second.payload);
    const deliveries = await eventually(async () => {
      const res = await successor!.http
        .get(`/v1/webhook-endpoints/${endpoint.body.endpoint.id}/deliveries`)
        .set('authorization', `Bearer ${apiKey}`);
      return res.body.data[0]?.status === 'succeeded' ? res.body.data : undefined;
    });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
  } finally {
    if (!killed) proc.child.kill('SIGKILL');
  }
}, 120_000);
