import { randomBytes } from 'node:crypto';
import { newId } from '../../src/core/ids.js';
import { loadEntitledPlan } from '../../src/modules/subscriptions/entitled-plan.js';
import { eventsOfRowChange } from '../../src/modules/subscriptions/subscription-events.js';
import type { SubscriptionRow } from '../../src/modules/subscriptions/subscription-sync.js';
import { OutboundEvents } from '../../src/modules/webhooks/outbound-events.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The Stripe receiver's function writes the outbound events of a change that leaves the MRR as it was,
 * rendered in SQL (src/modules/subscriptions/subscription-event-sql.ts). Here each change is made by the
 * function, then rendered again by the JavaScript rules every other path uses (`eventsOfRowChange`,
 * `OutboundEvents.prepare`) from the rows before and after: the events written must be those, byte for
 * byte.
 */
describe('outbound events rendered by the Stripe receiver’s function', () => {
  let server: TestServer;
  let appId: string;
  const db = () => server.deps.orm.em.fork().getConnection();
  const suffix = () => randomBytes(5).toString('hex');

  beforeAll(async () => {
    server = await startTestServer();
    const app = await server.createApp();
    appId = app.appId;
    const endpoint = await server.http
      .post('/v1/webhook-endpoints')
      .set('authorization', `Bearer ${app.apiKey}`)
      .send({ url: 'https://hooks.example/tollgate' });
    expect(endpoint.status).toBe(201);
    // The default plan, with a metered feature (shown as its limit), an array-index key and a decimal.
    await plan('free', 'Free "basic"', null, {
      api: { limit: 1000, reset: 'month' },
      beta: true,
      '2': 'two',
      ratio: 1.5,
    });
    await db().execute(`update plan set is_default = true where app_id = ? and slug = 'free'`, [appId]);
    await plan('pro', 'Pro', 'price_pro', { api: { limit: 50_000, reset: 'month' }, beta: true, seats: 10 });
    await plan('team', 'Team ü', 'price_team', { api: { limit: 90_000, reset: 'day' }, sso: true });
  });
  afterAll(() => server.close());

  const plan = (slug: string, name: string, price: string | null, features: object) =>
    db().execute(
      'insert into plan (id, app_id, slug, name, stripe_price_id, features) values (?, ?, ?, ?, ?, ?::jsonb)',
      [newId('pln'), appId, slug, name, price, JSON.stringify(features)],
    );

  /** A subscription at the plan `slug`, of a new customer (and of a new organization with `organization`). */
  const subscription = async (options: {
    slug: string;
    status: string;
    metadata?: object;
    /** The metadata as JSON text, for what `JSON.stringify` never writes (`1.50`, `1e2`). */
    metadataText?: string;
    organization?: boolean;
    periodEnd?: string;
  }) => {
    const customerId = newId('cus');
    await db().execute('insert into customer (id, app_id, email, email_lower) values (?, ?, ?, ?)', [
      customerId,
      appId,
      `${customerId}@example.com`,
      `${customerId}@example.com`,
    ]);
    let organizationId: string | null = null;
    if (options.organization) {
      organizationId = newId('org');
      await db().execute('insert into organization (id, app_id, name) values (?, ?, ?)', [
        organizationId,
        appId,
        'Org',
      ]);
    }
    const id = newId('sub');
    const stripeId = `sub_stripe_${suffix()}`;
    await db().execute(
      `insert into subscription (id, app_id, customer_id, organization_id, plan_id, stripe_subscription_id,
                                 stripe_customer_id, status, current_period_end, metadata, created_at)
       select ?, ?, ?, ?, p.id, ?, 'cus_stripe', ?, ?, ?::jsonb, '2026-01-02T03:04:05.678912Z'
         from plan p where p.app_id = ? and p.slug = ?`,
      [
        id,
        appId,
        customerId,
        organizationId,
        stripeId,
        options.status,
        options.periodEnd ?? '2026-12-01T00:00:00Z',
        options.metadataText ?? JSON.stringify(options.metadata ?? {}),
        appId,
        options.slug,
      ],
    );
    return { id, stripeId, customerId, organizationId };
  };

  /** The row as the receiver reads it, with its plan's public id and name. */
  const rowOf = async (id: string): Promise<SubscriptionRow> => {
    const [found] = await db().execute<{ row: SubscriptionRow }[]>(
      `select row_to_json(s)::jsonb || jsonb_build_object('plan', jsonb_build_object('id', p.slug, 'name', p.name)) as row
         from subscription s join plan p on p.id = s.plan_id where s.id = ?`,
      [id],
    );
    return found!.row;
  };

  const ownerOf = (row: SubscriptionRow) =>
    row.organization_id
      ? { appId, organizationId: row.organization_id }
      : { appId, customerId: row.customer_id! };

  let created = 1_000;

  /**
   * Applies a newer event with the state `state` through the function; answers the events it wrote and
   * those the JavaScript rules render for the same change.
   */
  const change = async (
    target: { id: string; stripeId: string },
    state: {
      status: string;
      prices?: string[];
      periodEnd?: string;
      cancelAtPeriodEnd?: boolean;
      canceledAt?: string;
    },
  ) => {
    const before = await rowOf(target.id);
    const em = server.deps.orm.em.fork();
    const entitlementsBefore = await loadEntitledPlan(em, ownerOf(before));
    const ids = [newId('msg'), newId('msg')];
    const [mrr] = await db().execute<{ mrr_inputs: string | null }[]>(
      'select mrr_inputs from subscription where id = ?',
      [target.id],
    );
    const [answer] = await db().execute<{ outcome: string; pending: { deliveryIds: string[] } }[]>(
      `select * from tollgate_apply_provider_event(?, ?, ?, 'customer.subscription.updated', ?, ?::text[], ?, 'cus_stripe',
                                                   ?::timestamptz, ?, null, ?::timestamptz, ?, ?, null)`,
      [
        target.stripeId,
        created++,
        `evt_${suffix()}`,
        state.status,
        `{${(state.prices ?? []).join(',')}}`,
        mrr!.mrr_inputs,
        state.periodEnd ?? before.current_period_end,
        state.cancelAtPeriodEnd ?? false,
        state.canceledAt ?? null,
        ids[0],
        ids[1],
      ],
    );
    expect(answer!.outcome).toBe('applied');
    const after = await rowOf(target.id);
    const entitlementsAfter = await loadEntitledPlan(em, ownerOf(after));
    const written = (
      await db().execute<{ id: string; type: string; body: string; subject_ids: string[] }[]>(
        'select id, type, body, subject_ids from webhook_event where id in (?)',
        [ids],
      )
    ).sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id));
    const planned = eventsOfRowChange({ before, after, entitlementsBefore, entitlementsAfter });
    const at = written[0] ? new Date(JSON.parse(written[0].body).timestamp) : new Date();
    const rendered = new OutboundEvents(undefined as never, { now: () => at }).prepare(planned);
    const expected = rendered.types.map((type, i) => ({
      type,
      body: rendered.bodies[i],
      subject_ids: JSON.parse(rendered.subjects[i]!),
    }));
    const deliveries = await db().execute<{ n: number }[]>(
      'select count(*)::int as n from webhook_delivery where event_id in (?)',
      [ids],
    );
    return {
      written: written.map(({ type, body, subject_ids }) => ({ type, body, subject_ids })),
      expected,
      deliveries: deliveries[0]!.n,
      answered: answer!.pending.deliveryIds.length,
    };
  };

  it('renders `subscription.updated` as the REST API shows the subscription, metadata of every JSON kind included', async () => {
    const target = await subscription({
      slug: 'pro',
      status: 'active',
      metadataText: JSON.stringify({
        b: { '2': 1, '1': [true, null, { z: 'ü' }] },
        a: 'line\nbreak "quoted" \\ back\u0001slash',
        '10': 1.5,
        '3': 0,
        note: '',
        é: 'é',
        list: [],
        nested: {},
      }).replace(/}$/, ',"price":1.50,"hundred":1e2,"negative":-0.250}'),
    });
    const result = await change(target, { status: 'past_due', periodEnd: '2027-01-31T23:59:59.999Z' });
    expect(result.written.map((e) => e.type)).toEqual(['subscription.updated']);
    expect(result.written).toEqual(result.expected);
    expect(result.deliveries).toBe(1);
    expect(result.answered).toBe(1);
  });

  it('renders `subscription.canceled` and the owner’s fall to the default plan as `entitlements.updated`', async () => {
    const target = await subscription({ slug: 'pro', status: 'active' });
    const result = await change(target, {
      status: 'canceled',
      canceledAt: '2026-11-27T10:11:12.345Z',
      cancelAtPeriodEnd: true,
    });
    expect(result.written.map((e) => e.type)).toEqual(['subscription.canceled', 'entitlements.updated']);
    expect(result.written).toEqual(result.expected);
    expect(JSON.parse(result.written[1]!.body).data.features).toEqual({
      '2': 'two',
      api: 1000,
      beta: true,
      ratio: 1.5,
    });
    expect(result.deliveries).toBe(2);
  });

  it('renders a plan change at Stripe for an organization: its new plan, entitlements and subjects', async () => {
    const target = await subscription({ slug: 'pro', status: 'active', organization: true });
    const result = await change(target, { status: 'active', prices: ['price_team'] });
    expect(result.written.map((e) => e.type)).toEqual(['subscription.updated', 'entitlements.updated']);
    expect(result.written).toEqual(result.expected);
    expect(JSON.parse(result.written[1]!.body).data).toMatchObject({ planName: 'Team ü' });
  });

  it('renders a subscription coming back to a paid status from one that entitles to nothing', async () => {
    const target = await subscription({ slug: 'team', status: 'unpaid' });
    const result = await change(target, { status: 'active' });
    expect(result.written.map((e) => e.type)).toEqual(['subscription.updated', 'entitlements.updated']);
    expect(result.written).toEqual(result.expected);
  });

  it('writes nothing for a newer event that changes nothing the API shows', async () => {
    const target = await subscription({
      slug: 'pro',
      status: 'active',
      periodEnd: '2026-12-01T00:00:00.000Z',
    });
    const result = await change(target, { status: 'active', periodEnd: '2026-12-01T00:00:00.000Z' });
    expect(result.expected).toEqual([]);
    expect(result.written).toEqual([]);
    expect(result.answered).toBe(0);
  });
});
