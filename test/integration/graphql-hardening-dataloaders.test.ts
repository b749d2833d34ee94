import { newId } from '../../src/core/ids.js';
import { App } from '../../src/modules/apps/app.entity.js';
import { Customer } from '../../src/modules/customers/customer.entity.js';
import { Plan } from '../../src/modules/plans/plan.entity.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import { eventually } from '../helpers/eventually.js';
import { logLines } from '../helpers/log-lines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const QUERY = `query($limit: Int) {
  customers(limit: $limit) { data { email subscriptions { status plan { name } } } }
}`;

describe('nested GraphQL lists are batched (no N+1 queries)', () => {
  let server: TestServer;
  const log = logLines();
  beforeAll(async () => {
    server = await startTestServer({ env: { LOG_LEVEL: 'info' }, logDestination: log.stream });
  });

  /** The statements on the pool of the request that got `requestId`, from its access-log line. */
  const poolStatementsOf = (requestId: string): number => {
    for (const line of log.lines) {
      const entry = JSON.parse(line);
      if (entry.req?.id === requestId && entry.res) return entry.db.statements as number;
    }
    throw new Error(`no access-log line for ${requestId}`);
  };
  afterAll(async () => {
    server.deps.orm.config.set('onQuery', (sql: string) => sql);
    await server.close();
  });

  /** An app with `customers` customers, each with a canceled and then an active subscription. */
  async function appWithCustomers(
    customers: number,
  ): Promise<{ appId: string; apiKey: string; emails: string[] }> {
    const { appId, apiKey } = await server.createApp();
    const emails: string[] = [];
    const em = server.deps.orm.em.fork();
    const app = em.getReference(App, appId);
    const basic = em.create(Plan, { id: newId('pln'), app, slug: 'basic', name: 'Basic' });
    const pro = em.create(Plan, { id: newId('pln'), app, slug: 'pro', name: 'Pro' });
    for (let i = 0; i < customers; i++) {
      const email = `batch-${i}-${appId}@example.com`;
      emails.push(email);
      const customer = em.create(Customer, {
        id: newId('cus'),
        app,
        email,
        emailLower: email.toLowerCase(),
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)),
      });
      for (const [plan, status, minute] of [
        [basic, 'canceled', 0],
        [pro, 'active', 1],
      ] as const) {
        em.create(Subscription, {
          id: newId('sub'),
          app,
          customer,
          plan,
          status,
          stripeSubscriptionId: `sub_test_${newId('sub')}`,
          stripeCustomerId: `cus_test_${i}`,
          createdAt: new Date(Date.UTC(2026, 1, 1, i, minute)),
        });
      }
    }
    await em.flush();
    return { appId, apiKey, emails: emails.reverse() };
  }

  /**
   * Runs the query and returns its answer, the SQL statements the ORM ran for it and the number of
   * statements it sent to the pool in all (the customer page is a prepared statement of its own, which the
   * ORM's query hook does not see).
   */
  async function countStatements({ appId, apiKey }: { appId: string; apiKey: string }, limit: number) {
    // A first request records the key's use (at most once a minute, off the request path); once that
    // write has landed, the counted request causes no bookkeeping statement of its own.
    await server.graphql('{ __typename }', {}, apiKey);
    const connection = server.deps.orm.em.fork().getConnection();
    await eventually(
      async () => {
        const rows = await connection.execute(
          'select 1 from api_key where app_id = ? and last_used_at is not null',
          [appId],
        );
        return rows.length > 0 ? true : undefined;
      },
      { what: 'the API key use to be recorded', timeoutMs: 5000 },
    );
    // A key is kept by a request whose read of it no notice naming it, nor a reconnection of the change
    // feed, overtook: warm up until a request finds it in memory.
    await eventually(
      async () => {
        const warm = await server.http
          .post('/graphql')
          .set('authorization', `Bearer ${apiKey}`)
          .send({ query: '{ __typename }' });
        return poolStatementsOf(warm.headers['x-request-id']) === 0 ? true : undefined;
      },
      { what: 'a request that finds the API key cached' },
    );
    const statements: string[] = [];
    server.deps.orm.config.set('onQuery', (sql: string) => {
      statements.push(sql);
      return sql;
    });
    try {
      const res = await server.http
        .post('/graphql')
        .set('authorization', `Bearer ${apiKey}`)
        .send({ query: QUERY, variables: { limit } });
      return { res, statements, onPool: poolStatementsOf(res.headers['x-request-id']) };
    } finally {
      server.deps.orm.config.set('onQuery', (sql: string) => sql);
    }
  }

  it('answers customers { subscriptions { plan { name } } } with the same number of statements for 3 or 25 customers', async () => {
    const small = await appWithCustomers(3);
    const large = await appWithCustomers(25);

    const few = await countStatements(small, 100);
    expect(few.res.body.errors).toBeUndefined();
    expect(few.res.body.data.customers.data).toEqual(
      small.emails.map((email) => ({
        email,
        subscriptions: [
          { status: 'active', plan: { name: 'Pro' } },
          { status: 'canceled', plan: { name: 'Basic' } },
        ],
      })),
    );

    const many = await countStatements(large, 100);
    expect(many.res.body.errors).toBeUndefined();
    expect(many.res.body.data.customers.data).toHaveLength(25);
    expect(many.res.body.data.customers.data[24].subscriptions).toHaveLength(2);

    expect(many.statements.length).toBe(few.statements.length);
    expect(many.onPool).toBe(few.onPool);
    // One statement reads every customer's subscriptions and one every plan, however many customers.
    const subscriptionReads = many.statements.filter((sql) => /from "subscription"/i.test(sql));
    const planReads = many.statements.filter((sql) => /from "plan"/i.test(sql));
    expect(subscriptionReads).toHaveLength(1);
    expect(planReads).toHaveLength(1);
    // Customer page with its total (one prepared statement), subscriptions, plans: the API key, known
    // since the first request, comes from the credential cache.
    expect(many.statements).toHaveLength(2);
    expect(many.onPool).toBe(3);
  });
});
