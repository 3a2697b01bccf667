// OpenTelemetry for the worker process, set up the standard way: the Node SDK, configured by the standard OTEL_*
// variables (exporter, endpoint, protocol, sampler, propagators, resource attributes) which the SDK reads itself;
// src/config.ts validates them first and decides only whether traces are exported at all. Code elsewhere uses
// @opentelemetry/api alone. OpenTelemetry's own diagnostics (a failed export, a bad variable) go to the worker's
// log at warn and above. Metrics are read by the Prometheus exporter on scrape (no server of its own).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { diag, DiagLogLevel, metrics, trace, type DiagLogger, type Tracer } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { Logger } from './logger.ts';
import { orderSamplerFor } from './order-sampler.ts';
import { WorkerMetrics } from './metrics.ts';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from './semconv.ts';

export const defaultServiceName = 'exchange-order-worker';

export interface Telemetry {
  tracer: Tracer;
  metrics: WorkerMetrics;
  shutdown(): Promise<void>;
}

/** The version in the package.json nearest above this file (the source tree or the built dist/ alike). */
export function serviceVersion(start: string = import.meta.dirname): string {
  for (let dir = start; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: unknown };
      if (typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* not here */
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

function parseErrorJson(text: string): { message?: string; code?: string } | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(text) as { message?: unknown; code?: unknown };
    return {
      ...(typeof parsed.message === 'string' ? { message: parsed.message } : {}),
      ...(typeof parsed.code === 'string' ? { code: parsed.code } : {}),
    };
  } catch {
    return undefined;
  }
}

/** OpenTelemetry's diagnostic logger, on the worker's pino logger (messages only: no arguments are logged). */
function pinoDiagLogger(logger: Logger): DiagLogger {
  const log = logger.child({ component: 'opentelemetry' });
  const describe = (args: unknown[]): string | undefined => {
    const error = args.find((a): a is Error => a instanceof Error);
    return error?.message ?? (typeof args[0] === 'string' ? args[0] : undefined);
  };
  return {
    // The SDK's global error handler (a failed export, among others) hands over the error as a JSON string.
    error: (message, ...args) => {
      const reported = parseErrorJson(message);
      if (reported)
        log.error(
          { detail: reported.message, code: reported.code },
          'OpenTelemetry error (most often a failed export)',
        );
      else log.error({ detail: describe(args) }, message);
    },
    warn: (message, ...args) => log.warn({ detail: describe(args) }, message),
    info: (message) => log.info(message),
    debug: (message) => log.debug(message),
    verbose: (message) => log.trace(message),
  };
}

export function startTelemetry(opts: {
  workerId: string;
  /** False: no span leaves the process (context still propagates through Kafka headers). */
  exportTraces: boolean;
  /** OTEL_SERVICE_NAME, when set (it wins over the default name). */
  serviceName: string | undefined;
  /** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as validated: a ratio sampler follows the order. */
  sampler?: { name: string | undefined; ratio: number | undefined };
  logger: Logger;
}): Telemetry {
  const sampler = orderSamplerFor(opts.sampler?.name, opts.sampler?.ratio);
  diag.setLogger(pinoDiagLogger(opts.logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  const prometheus = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const sdk = new NodeSDK({
    // The envDetector (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) is merged over these. Only detectors whose
    // attributes are known at once: the host detector's asynchronous host.id made the first metric scrape log
    // "Accessing resource attributes before async attributes settled"; the process detector would export the
    // command line.
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: opts.serviceName ?? defaultServiceName,
      [ATTR_SERVICE_VERSION]: serviceVersion(),
      [ATTR_SERVICE_INSTANCE_ID]: opts.workerId,
      'host.name': hostname(),
      'process.pid': process.pid,
      'process.runtime.name': 'nodejs',
      'process.runtime.version': process.versions.node,
    }),
    resourceDetectors: [envDetector],
    metricReaders: [prometheus],
    // Logs stay JSON lines on stdout (pino), correlated by trace_id/span_id; no OTLP log export.
    logRecordProcessors: [],
    instrumentations: [
      // Event-loop delay, event-loop utilisation, heap spaces (nodejs_eventloop_*_seconds, v8js_*_bytes on /metrics).
      new RuntimeNodeInstrumentation(),
      // Redis commands issued for a traced piece of work (leases, the budget); lease renewals on their own timers
      // would be one trace each, so only commands with a parent span are recorded, and only their names. Without
      // exported traces it would only wrap every command in a span that nothing records (about 5 Redis commands
      // per created order): not installed then.
      ...(opts.exportTraces
        ? [
            new IORedisInstrumentation({
              requireParentSpan: true,
              dbStatementSerializer: (command) => command,
            }),
          ]
        : []),
    ],
    // Without exported traces, no span processor (the SDK then registers no tracer provider); with them, the
    // processors and exporters the OTEL_* variables name.
    ...(opts.exportTraces ? {} : { spanProcessors: [] }),
    // A ratio sampler decides an order's own traces (polls, timers) as its first trace was decided; the SDK reads
    // the other samplers from the environment itself.
    ...(opts.exportTraces && sampler ? { sampler } : {}),
  });
  sdk.start();
  // The instrumentation patches ioredis when it is required; our ESM import of it happened before the SDK started
  // (and an ESM import is not seen by the require hook), so require it once now: the same module object, patched.
  if (opts.exportTraces) createRequire(import.meta.url)('ioredis');
  // sdk.start() may have replaced the diagnostic logger with a console one (OTEL_LOG_LEVEL): ours again.
  diag.setLogger(pinoDiagLogger(opts.logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  return {
    tracer: trace.getTracer(defaultServiceName, serviceVersion()),
    metrics: new WorkerMetrics(metrics.getMeter(defaultServiceName, serviceVersion()), prometheus),
    shutdown: () => sdk.shutdown(),
  };
}
