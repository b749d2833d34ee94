#!/usr/bin/env node
/**
 * The entry point. Tracing must hook module loading before the HTTP, GraphQL and PostgreSQL libraries are
 * loaded, and static imports would load them first; so the command line, and everything it imports, is
 * loaded only after tracing has started. Without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry module is
 * loaded at all. (An empty value counts as unset, as everywhere in src/config.ts.) The command line
 * itself loads server code only for the command that runs (src/cli.ts).
 */
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
  const { startTracing } = await import('./telemetry/tracing.js');
  startTracing();
}
const { runCli } = await import('./cli.js');
await runCli(process.argv.slice(2));
