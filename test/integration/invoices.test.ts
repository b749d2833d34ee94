import { BillingFixtures } from '../helpers/billing-fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startServerWithUnreachableStripe } from '../helpers/stripe-fixtures.js';

const INVOICES = `query($customerId: ID, $limit: Int) {
  invoices(customerId: $customerId, limit: $limit) { id created amountPaid currency status hostedInvoiceUrl }
}`;

let server: TestServer;
let apiKey: string;
let billing: BillingFixtures;

beforeAll(async () => {
  server = await startTestServer();
  const app = await server.createApp();
  apiKey = app.apiKey;
  billing = new BillingFixtures(server, app.appId);
});

afterAll(async () => {
  await server?.close();
});

/** A customer with two paid subscriptions (so two invoices at Stripe, 2000 and 9000 usd cents). */
async function customerWithInvoices() {
  const customer = await billing.customer();
  const owner = { customerId: customer.id, stripeCustomerId: customer.stripeCustomerId! };
  await billing.subscription(owner, await billing.plan({ unitAmount: 2000 }));
  await billing.subscription(owner, await billing.plan({ unitAmount: 9000 }));
  return customer;
}

describe('invoices', () => {
  it("lists a customer's invoices from Stripe, newest first, with an API key", async () => {
    const customer = await customerWithInvoices();
    const atStripe = await billing.stripe.invoices.list({ customer: customer.stripeCustomerId! });
    expect(atStripe.data).toHaveLength(2);
    const res = await server.graphql(INVOICES, { customerId: customer.id }, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        invoices: atStripe.data.map((invoice) => ({
          id: invoice.id,
          created: new Date(invoice.created * 1000).toISOString(),
          amountPaid: invoice.amount_paid,
          currency: 'usd',
          status: 'paid',
          hostedInvoiceUrl: invoice.hosted_invoice_url,
        })),
      },
    });
    expect(res.body.data.invoices.map((i: { amountPaid: number }) => i.amountPaid)).toEqual([9000, 2000]);
  });

  it('honours limit', async () => {
    const customer = await customerWithInvoices();
    const res = await server.graphql(INVOICES, { customerId: customer.id, limit: 1 }, apiKey);
    expect(res.body.data.invoices).toHaveLength(1);
    expect(res.body.data.invoices[0].amountPaid).toBe(9000);
    const tooMany = await server.graphql(INVOICES, { customerId: customer.id, limit: 101 }, apiKey);
    expect(tooMany.body.errors?.[0]).toMatchObject({
      message: 'limit: limit must be an integer between 1 and 100',
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
    });
  });

  it('answers an empty list for a customer never linked to Stripe', async () => {
    const customer = await billing.customer({ linked: false });
    const res = await server.graphql(INVOICES, { customerId: customer.id }, apiKey);
    expect(res.body).toEqual({ data: { invoices: [] } });
  });

  it("gives a customer session its own invoices, and 404 for another customer's id", async () => {
    const customer = await customerWithInvoices();
    const other = await billing.customer();
    const token = await billing.session(customer.id);
    const own = await server.graphql(INVOICES, {}, token);
    expect(own.body.data.invoices.map((i: { amountPaid: number }) => i.amountPaid)).toEqual([9000, 2000]);
    const named = await server.graphql(INVOICES, { customerId: customer.id }, token);
    expect(named.body.data.invoices).toHaveLength(2);
    const theirs = await server.graphql(INVOICES, { customerId: other.id }, token);
    expect(theirs.body.data).toBeNull();
    expect(theirs.body.errors?.[0]).toMatchObject({
      message: `Customer ${other.id} not found`,
      extensions: { code: 'NOT_FOUND', statusCode: 404 },
    });
  });

  it("answers 404 for another app's customer, 400 without customerId and 401 without a credential", async () => {
    const customer = await customerWithInvoices();
    const other = await server.createApp();
    const foreign = await server.graphql(INVOICES, { customerId: customer.id }, other.apiKey);
    expect(foreign.body.errors?.[0].extensions).toMatchObject({ code: 'NOT_FOUND', statusCode: 404 });
    const unnamed = await server.graphql(INVOICES, {}, apiKey);
    expect(unnamed.body.errors?.[0]).toMatchObject({
      message: 'exactly one of customerId or organizationId is required',
      extensions: { code: 'BAD_USER_INPUT', statusCode: 400 },
    });
    const anonymous = await server.graphql(INVOICES, { customerId: customer.id });
    expect(anonymous.body.errors?.[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED', statusCode: 401 });
  });
});

describe('invoices when Stripe is unreachable', () => {
  let offline: TestServer;

  beforeAll(async () => {
    offline = await startServerWithUnreachableStripe();
  });

  afterAll(async () => {
    await offline?.close();
  });

  it('answers a 503-class error, not an empty list or a crash', async () => {
    const app = await offline.createApp();
    const customers = await offline.http
      .post('/v1/customers')
      .set('authorization', `Bearer ${app.apiKey}`)
      .send({ email: 'offline@example.com' });
    expect(customers.status).toBe(201);
    await offline.deps.orm.em
      .fork()
      .getConnection()
      .execute("update customer set payment_customer_id = 'cus_offline' where id = ?", [customers.body.id]);
    const res = await offline.graphql(INVOICES, { customerId: customers.body.id }, app.apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: null,
      errors: [
        expect.objectContaining({
          message: 'The payment provider is unavailable, try again later',
          extensions: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 },
        }),
      ],
    });
    expect((await offline.http.get('/healthz')).status).toBe(200);
  });
});
