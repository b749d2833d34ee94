import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { verify, WebhookReceiver } from '../helpers/webhook-receiver.js';

/** The metering events, signed, at a real receiver: a balance reaching 0, a grant created and voided. */
let server: TestServer;
let receiver: WebhookReceiver;
beforeAll(async () => {
  [server, receiver] = await Promise.all([startTestServer(), WebhookReceiver.start()]);
});
afterAll(async () => {
  await server.close();
  await receiver.close();
});

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

describe('metering webhooks', () => {
  it('sends usage.limit_reached once the balance reaches 0, and credit_grant.created / voided', async () => {
    const { appId, apiKey } = await server.createApp();
    const endpoint = await server.http
      .post('/v1/webhook-endpoints')
      .set(auth(apiKey))
      .send({
        url: `${receiver.url}/${appId}`,
        events: ['usage.limit_reached', 'credit_grant.created', 'credit_grant.voided'],
      });
    expect(endpoint.status).toBe(201);
    const secret = endpoint.body.secret as string;
    const fx = new Fixtures(server, appId);
    await fx.plan('free', { calls: { limit: 3, reset: 'never' } } as never, { isDefault: true });
    const customerId = await fx.customer();
    const mine = (type: string) =>
      receiver.received.filter((r) => r.path === `/${appId}` && r.payload.type === type);

    const grant = await server.http
      .post('/v1/credit-grants')
      .set(auth(apiKey))
      .send({ customerId, feature: 'calls', amount: 2, description: 'trial top-up' });
    expect(grant.status).toBe(201);
    const created = await eventually(() => mine('credit_grant.created')[0], { timeoutMs: 20_000 });
    expect(verify(secret, created)).toEqual(created.payload);
    expect(created.payload.data).toEqual(grant.body);

    const consume = (amount: number) =>
      server.http.post('/v1/usage').set(auth(apiKey)).send({ customerId, feature: 'calls', amount });
    expect((await consume(4)).body.balance.remaining).toBe(1);
    expect((await consume(1)).body.balance.remaining).toBe(0);
    expect((await consume(1)).body.allowed).toBe(false);
    const reached = await eventually(() => mine('usage.limit_reached')[0], { timeoutMs: 20_000 });
    expect(reached.payload.data).toEqual({
      customerId,
      organizationId: null,
      feature: 'calls',
      limit: 3,
      granted: 2,
      used: 5,
      remaining: 0,
      overage: 0,
      resetsAt: null,
    });

    const voided = await server.http.post(`/v1/credit-grants/${grant.body.id}/void`).set(auth(apiKey));
    expect(voided.status).toBe(200);
    const voidEvent = await eventually(() => mine('credit_grant.voided')[0], { timeoutMs: 20_000 });
    expect(voidEvent.payload.data).toEqual(voided.body);
    // Only the consumption that reached 0 sent the event.
    expect(mine('usage.limit_reached')).toHaveLength(1);
  });
});
