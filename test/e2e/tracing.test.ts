import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import request from 'supertest';
import { StripeEmulator } from '../../src/stripe-emulator/stripe-emulator.js';
import { eventually } from '../helpers/eventually.js';
import { runCli, startCli } from '../helpers/process.js';
import { productionEnv, RELAXED_DATABASE_TIMEOUTS } from '../helpers/server.js';

/**
 * OpenTelemetry tracing, switched on by OTEL_EXPORTER_OTLP_ENDPOINT: the built service (as deployed)
 * sends its spans over OTLP/HTTP to a receiver this test runs on loopback. Requests, PostgreSQL queries,
 * GraphQL operations and Stripe calls each arrive as spans of the request's trace. Unset, no
 * OpenTelemetry SDK, instrumentation or exporter module is loaded at all.
 */

interface OtlpSpan {
  readonly traceId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: ReadonlyArray<{ key: string; value: Record<string, unknown> }>;
}
const SERVER = 2;
const CLIENT = 3;

/** A minimal OTLP/HTTP receiver: collects the spans of every JSON export POSTed to /v1/traces. */
async function startReceiver(): Promise<{
  url: string;
  spans: OtlpSpan[];
  services: Set<string>;
  close(): Promise<void>;
}> {
  const spans: OtlpSpan[] = [];
  const services = new Set<string>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        !/json/.test(req.headers['content-type'] ?? '')
      ) {
        res.writeHead(415).end();
        return;
      }
      for (const resourceSpans of JSON.parse(body).resourceSpans ?? []) {
        for (const attribute of resourceSpans.resource?.attributes ?? []) {
          if (attribute.key === 'service.name') services.add(attribute.value.stringValue);
        }
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) spans.push(...scopeSpans.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    services,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};
const mentions = (span: OtlpSpan, text: string) =>
  span.attributes.some((a) => Object.values(a.value).some((v) => typeof v === 'string' && v.includes(text)));

describe('tracing', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let emulator: StripeEmulator;
  beforeAll(async () => {
    receiver = await startReceiver();
    emulator = await StripeEmulator.start();
  });
  afterAll(async () => {
    await emulator.close();
    await receiver.close();
  });

  it('exports spans for HTTP requests, GraphQL operations, PostgreSQL queries and Stripe calls', async () => {
    const adminToken = `tg_admin_${randomBytes(16).toString('hex')}`;
    const proc = startCli(['serve'], {
      ...productionEnv({ TRUST_PROXY: 'loopback' }),
      ...RELAXED_DATABASE_TIMEOUTS,
      DATABASE_URL: process.env.TEST_DATABASE_URL,
      ADMIN_TOKEN: adminToken,
      PORT: '0',
      STRIPE_API_BASE: emulator.url,
      STRIPE_SECRET_KEY: 'sk_test_tracing',
      LOG_LEVEL: 'warn',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'tollgate-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    try {
      const base = await eventually(
        () => {
          if (proc.child.exitCode !== null) throw new Error(`serve exited: ${proc.output.stderr}`);
          return /REST API\s+(http:\/\/\S+)\/v1/.exec(proc.output.stdout)?.[1];
        },
        { what: 'the banner', timeoutMs: 30_000 },
      );
      const https = (req: request.Test) => req.set('x-forwarded-proto', 'https');

      const created = await https(request(base).post('/graphql'))
        .set('authorization', `Bearer ${adminToken}`)
        .send({
          operationName: 'TracedApp',
          query: `mutation TracedApp { createApp(input: {name: "traced", allowedCallbackUrls: "https://shop.example.com/*"}) { apiKey app { id } } }`,
        });
      expect(created.status).toBe(200);
      const { apiKey, app } = created.body.data.createApp;

      const stripe = new Stripe('sk_test_tracing', {
        host: new URL(emulator.url).hostname,
        port: Number(new URL(emulator.url).port),
        protocol: 'http',
      });
      const product = await stripe.products.create({ name: 'Traced' });
      const price = await stripe.prices.create({
        product: product.id,
        currency: 'usd',
        unit_amount: 1000,
        recurring: { interval: 'month' },
      });
      const plan = await https(request(base).post('/graphql'))
        .set('authorization', `Bearer ${adminToken}`)
        .send({
          query: `mutation($appId: ID!, $price: String!) { upsertPlan(appId: $appId, input: {id: "pro", name: "Pro", stripePriceId: $price}) { id } }`,
          variables: { appId: app.id, price: price.id },
        });
      expect(plan.body).toEqual({ data: { upsertPlan: { id: 'pro' } } });

      const checkout = await https(request(base).post('/v1/checkout/session'))
        .set('authorization', `Bearer ${apiKey}`)
        .send({
          planId: 'pro',
          email: 'traced@example.com',
          successUrl: 'https://shop.example.com/ok',
          cancelUrl: 'https://shop.example.com/cancel',
        });
      expect(checkout.status).toBe(200);

      const spans = receiver.spans;
      const checkoutRequest = await eventually(
        () => spans.find((s) => s.kind === SERVER && attribute(s, 'http.route') === '/v1/checkout/session'),
        { what: 'the span of POST /v1/checkout/session' },
      );
      expect(checkoutRequest.name).toBe('POST /v1/checkout/session');
      const ofCheckout = (s: OtlpSpan) => s.traceId === checkoutRequest.traceId;

      // The Stripe SDK's calls, in the request's trace.
      const stripeCall = await eventually(
        () => spans.find((s) => ofCheckout(s) && s.kind === CLIENT && mentions(s, '/v1/checkout/sessions')),
        { what: 'a Stripe call span' },
      );
      expect(attribute(stripeCall, 'server.port')).toBe(Number(new URL(emulator.url).port));

      // PostgreSQL statements, in the request's trace (the change feed's LISTEN and its round trips may be
      // there too: the credential cache opens the feed on first use).
      const query = await eventually(
        () =>
          spans.find(
            (s) =>
              ofCheckout(s) &&
              attribute(s, 'db.system.name') === 'postgresql' &&
              s.name.startsWith('pg.query:') &&
              /^(select|insert|update|begin|commit)/i.test(String(attribute(s, 'db.query.text'))),
          ),
        { what: 'a PostgreSQL span' },
      );
      expect(query.kind).toBe(CLIENT);
      expect(String(attribute(query, 'db.query.text'))).toMatch(/^(select|insert|update|begin|commit)/i);

      // The GraphQL operation, in the trace of its POST /graphql.
      const operation = await eventually(() => spans.find((s) => s.name === 'mutation TracedApp'), {
        what: 'the GraphQL operation span',
      });
      expect(attribute(operation, 'graphql.operation.name')).toBe('TracedApp');
      expect(
        spans.some(
          (s) =>
            s.traceId === operation.traceId && s.kind === SERVER && attribute(s, 'http.route') === '/graphql',
        ),
      ).toBe(true);
      expect([...receiver.services]).toEqual(['tollgate-under-test']);

      // Probes come every few seconds from machines: never traced.
      const probes = await https(request(base).get('/readyz'));
      expect(probes.status).toBe(200);
    } finally {
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
    }
    expect(receiver.spans.filter((s) => mentions(s, '/readyz') || mentions(s, '/healthz'))).toEqual([]);
  });

  it('loads no OpenTelemetry SDK, instrumentation or exporter when the endpoint is unset', async () => {
    // Records every module the process resolves. `migrate` loads the whole application, as `serve` does,
    // then stops at the closed database port (`help` would load none of it: test/e2e/cli-help.test.ts).
    const recorder = `
      import { registerHooks } from 'node:module';
      const seen = new Set();
      registerHooks({ resolve(specifier, context, next) {
        const result = next(specifier, context);
        const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(result.url);
        if (m) seen.add(m[1]);
        return result;
      } });
      process.on('exit', () => process.stderr.write('packages: ' + [...seen].sort().join(',') + '\\n'));`;
    const loaded = async (env: Record<string, string>) => {
      const result = await runCli(
        ['migrate'],
        { ...env, DATABASE_URL: 'postgres://127.0.0.1:9/none' },
        {
          nodeOptions: ['--import', `data:text/javascript,${encodeURIComponent(recorder)}`],
        },
      );
      expect(result.stderr).toContain('tollgate: cannot connect to PostgreSQL at 127.0.0.1:9 (DATABASE_URL)');
      expect(result.code).toBe(1);
      const packages = /packages: (.*)\n/.exec(result.stderr)?.[1]?.split(',') ?? [];
      expect(packages).toContain('express');
      // prom-client requires the API facade, a no-op without a registered SDK: it does not count.
      return packages.filter((name) => /^@opentelemetry\/(?!api$)|-in-the-middle$/.test(name));
    };
    expect(await loaded({})).toEqual([]);
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toEqual(
      expect.arrayContaining([
        '@opentelemetry/sdk-trace',
        '@opentelemetry/instrumentation-pg',
        'import-in-the-middle',
      ]),
    );
  });
});
