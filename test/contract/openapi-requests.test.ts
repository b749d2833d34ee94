import { readFileSync } from 'node:fs';
import ajv2020Module from 'ajv/dist/2020.js';
import ajvFormatsModule from 'ajv-formats';
import YAML from 'yaml';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPaidPlan } from '../helpers/stripe-fixtures.js';

/**
 * Request bodies as a validating client reads schema/openapi.yaml (ajv with ajv-formats, as Prism and
 * generated clients do): the documentation's own checkout example must pass, and the server must agree
 * with the document on what passes.
 */

const Ajv2020 = ajv2020Module.default;
const addFormats = ajvFormatsModule.default;

const DOCUMENT_ID = 'https://tollgate.local/openapi.yaml';
const document = YAML.parse(readFileSync('schema/openapi.yaml', 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...document, $id: DOCUMENT_ID });

function validator(pointer: string) {
  return ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
}

/** The checkout body of the README's tour and the checkout guide, with the placeholder Stripe fills in. */
const GUIDE_CHECKOUT = {
  planId: 'pro',
  customerId: 'cus_2m4x',
  successUrl: 'https://app.example.com/welcome?session={CHECKOUT_SESSION_ID}',
  cancelUrl: 'https://app.example.com/pricing',
  couponCode: 'SPRING25',
  collectBillingAddress: true,
  metadata: { campaign: 'spring' },
};

describe('request bodies against schema/openapi.yaml', () => {
  const checkout = validator('/components/schemas/CheckoutSessionRequest');

  it("accepts the guide's checkout, whose successUrl holds {CHECKOUT_SESSION_ID}", () => {
    expect(checkout(GUIDE_CHECKOUT)).toBe(true);
    expect(
      checkout({ ...GUIDE_CHECKOUT, successUrl: 'http://localhost:3000/ok?session={CHECKOUT_SESSION_ID}' }),
    ).toBe(true);
  });

  it('refuses a successUrl that is not an absolute http(s) URL', () => {
    for (const successUrl of [
      '/welcome',
      'ftp://files.example.com/ok',
      'https://',
      'https://app.example.com/a b',
    ])
      expect(checkout({ ...GUIDE_CHECKOUT, successUrl })).toBe(false);
  });

  it('takes a cancel without atPeriodEnd and a plan change without prorationBehavior', () => {
    const cancel = validator(
      '/components/requestBodies/CancelSubscriptionRequest/content/application~1json/schema',
    );
    const change = validator('/components/requestBodies/ChangePlanRequest/content/application~1json/schema');
    expect(cancel({})).toBe(true);
    expect(cancel({ atPeriodEnd: 'yes' })).toBe(false);
    expect(change({ planId: 'team' })).toBe(true);
    expect(change({ planId: 'team', prorationBehavior: 'sometimes' })).toBe(false);
  });
});

describe('the server agrees with the document on successUrl', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('starts a checkout whose successUrl holds the placeholder, and refuses one the document refuses', async () => {
    const { apiKey, appId } = await server.createApp();
    await createPaidPlan(server, appId, { id: 'pro', name: 'Pro' });
    // The guide's body for a new customer, without the coupon (no such promotion code exists here).
    const { couponCode: _coupon, customerId: _customer, ...rest } = GUIDE_CHECKOUT;
    const body = { ...rest, email: 'placeholder@example.com' };
    const ok = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send(body);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ url: expect.stringMatching(/^http/) });
    const refused = await server.http
      .post('/v1/checkout/session')
      .set('authorization', `Bearer ${apiKey}`)
      .send({ ...body, successUrl: '/welcome' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^successUrl: /);
  });
});
