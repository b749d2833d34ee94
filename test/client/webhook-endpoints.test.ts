import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Tollgate, TollgateError, verifyWebhook } from '@tollgate/client';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Webhook endpoints through @tollgate/client, and `verifyWebhook` on real deliveries Tollgate signs:
 * a receiver on loopback records what arrives.
 */
let server: TestServer;
let client: Tollgate;
let receiver: Server;
let receiverUrl: string;
const received: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = await startTestServer();
  client = new Tollgate({ apiKey: (await server.createApp()).apiKey, baseUrl: server.url });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await server?.close();
});

const delivered = (path: string, type: string) =>
  eventually(() => received.find((r) => r.path === path && JSON.parse(r.body).type === type), {
    what: `a ${type} delivery at ${path}`,
    timeoutMs: 20_000,
  });

describe('Tollgate.webhookEndpoints and verifyWebhook', () => {
  it('creates, lists, updates, rotates and deletes an endpoint; deliveries verify with its secret', async () => {
    const created = await client.webhookEndpoints.create({
      url: `${receiverUrl}/crm`,
      events: ['customer.created'],
      description: 'CRM',
    });
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.endpoint).toMatchObject({
      url: `${receiverUrl}/crm`,
      events: ['customer.created'],
      enabled: true,
    });
    const id = created.endpoint.id;
    expect((await client.webhookEndpoints.list()).data.map((e) => e.id)).toEqual([id]);

    const customer = await client.customers.create({
      email: `hook-${randomBytes(4).toString('hex')}@example.com`,
    });
    const first = await delivered('/crm', 'customer.created');
    const event = await verifyWebhook<{ type: string; data: { id: string } }>(
      first.body,
      first.headers as never,
      created.secret,
    );
    expect(event).toMatchObject({ type: 'customer.created', data: { id: customer.id } });
    const forged = await verifyWebhook(
      first.body,
      first.headers as never,
      `whsec_${randomBytes(32).toString('base64')}`,
    ).catch((e: unknown) => e);
    expect(forged).toBeInstanceOf(TollgateError);

    const updated = await client.webhookEndpoints.update(id, {
      description: 'CRM v2',
      events: ['customer.updated'],
    });
    expect(updated).toMatchObject({ id, description: 'CRM v2', events: ['customer.updated'] });

    const rotated = await client.webhookEndpoints.rotateSecret(id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    await client.customers.update(customer.id, { name: 'Renamed' });
    const second = await delivered('/crm', 'customer.updated');
    expect(await verifyWebhook(second.body, second.headers as never, rotated.secret)).toMatchObject({
      type: 'customer.updated',
    });

    expect(await client.webhookEndpoints.delete(id)).toBeUndefined();
    expect((await client.webhookEndpoints.list()).data).toEqual([]);
  });
});
