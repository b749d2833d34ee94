import { readFileSync } from 'node:fs';
import { register } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { GraphQLInstrumentation } from '@opentelemetry/instrumentation-graphql';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { beforeExit } from './shutdown.js';

/** Probes and scrapes come every few seconds from machines, not users: a span each would drown the traces. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Starts OpenTelemetry tracing: incoming and outgoing HTTP (the Stripe SDK's calls included), Express
 * routes, GraphQL operations and PostgreSQL queries, exported over OTLP/HTTP (JSON) to
 * OTEL_EXPORTER_OTLP_ENDPOINT, with the standard OTEL_* variables honoured by the exporter and the batch
 * processor. Loaded by src/main.ts only when that variable is set, before any library it instruments.
 */
export function startTracing(): void {
  // The application is ECMAScript modules: the loader hook lets the instrumentations patch libraries
  // imported with `import`, which require hooks alone never see.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);

  const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': process.env.OTEL_SERVICE_NAME || 'tollgate',
      'service.version': manifest.version,
    }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        // The standard variable, which this SDK release no longer reads itself (its default is 5 s).
        scheduledDelayMillis: Number(process.env.OTEL_BSP_SCHEDULE_DELAY) || undefined,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]!),
      }),
      // Routers and route handlers only: a span per middleware (body parser, credentials…) is noise.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      new GraphQLInstrumentation({ mergeItems: true, ignoreTrivialResolveSpans: true }),
      new PgInstrumentation(),
      new UndiciInstrumentation(),
    ],
  });

  // `serve` exits as soon as it has shut down: the spans still in the batch go out first.
  beforeExit(() => provider.shutdown());
}
