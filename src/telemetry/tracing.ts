// OpenTelemetry tracing for the worker process. Code everywhere else uses only @opentelemetry/api; this module
// registers the SDK at the composition root. Spans are exported over OTLP/HTTP when an endpoint is configured;
// without one, the API stays a no-op. Span attributes never carry secrets (keys, tokens, webhook secrets).
import { trace, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node';

export interface Tracing {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

export function startTracing(opts: {
  serviceName: string;
  workerId: string;
  otlpEndpoint: string | undefined;
  extraProcessors?: SpanProcessor[];
}): Tracing {
  const processors: SpanProcessor[] = [...(opts.extraProcessors ?? [])];
  if (opts.otlpEndpoint) {
    processors.push(
      new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${opts.otlpEndpoint.replace(/\/+$/, '')}/v1/traces` }),
      ),
    );
  }
  if (processors.length === 0)
    return { tracer: trace.getTracer(opts.serviceName), shutdown: () => Promise.resolve() };
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': opts.serviceName,
      'service.instance.id': opts.workerId,
    }),
    spanProcessors: processors,
  });
  provider.register();
  return { tracer: trace.getTracer(opts.serviceName), shutdown: () => provider.shutdown() };
}
