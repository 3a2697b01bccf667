// The process's OpenTelemetry set-up, started once in this file as the worker starts it: the resource follows the
// standard variables and the package version, log lines carry the trace and the order, and a failed span export
// reaches the worker's log (at warn or above) without the exporter's secret headers.
import { createServer } from 'node:net';
import { context, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { withOrderId } from '../../../src/telemetry/propagation.ts';
import { serviceVersion, startTelemetry, type Telemetry } from '../../../src/telemetry/sdk.ts';

const lines: string[] = [];
let telemetry: Telemetry;
const saved = { ...process.env };

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  Object.assign(process.env, {
    OTEL_SERVICE_NAME: 'eow-unit',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=unit',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_HEADERS: 'authorization=collector-secret-789',
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
  });
  const logger = createLogger({
    level: 'info',
    workerId: 'unit-1',
    secrets: ['collector-secret-789'],
    destination: { write: (line: string) => void lines.push(line) },
  });
  telemetry = startTelemetry({ workerId: 'unit-1', exportTraces: true, serviceName: 'eow-unit', logger });
});

afterAll(async () => {
  await telemetry.shutdown().catch(() => {});
  process.env = saved;
});

describe('telemetry set-up', () => {
  it('names the service from OTEL_SERVICE_NAME, adds OTEL_RESOURCE_ATTRIBUTES and the package version', async () => {
    const text = await telemetry.metrics.render();
    const target = text.split('\n').find((l) => l.startsWith('target_info{')) ?? '';
    expect(target).toContain('service_name="eow-unit"');
    expect(target).toContain('deployment_environment_name="unit"');
    expect(target).toContain('service_instance_id="unit-1"');
    expect(target).toContain(`service_version="${serviceVersion()}"`);
    expect(serviceVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('writes trace_id, span_id, order_id, worker_id and a text level on log lines inside a span', () => {
    const logger = createLogger({
      level: 'info',
      workerId: 'unit-1',
      destination: { write: (line: string) => void lines.push(line) },
    });
    const span = telemetry.tracer.startSpan('unit');
    context.with(withOrderId(trace.setSpan(context.active(), span), 'order-42'), () => logger.warn('inside'));
    span.end();
    logger.info('outside');
    const [inside, outside] = lines.slice(-2).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(inside).toMatchObject({
      level: 'warn',
      worker_id: 'unit-1',
      order_id: 'order-42',
      trace_id: span.spanContext().traceId,
      span_id: span.spanContext().spanId,
    });
    expect(outside).toMatchObject({ level: 'info', worker_id: 'unit-1' });
    expect(outside).not.toHaveProperty('trace_id');
  });

  it('logs a failed span export through the worker logger, without the exporter secret', async () => {
    telemetry.tracer.startSpan('lost').end();
    const deadline = Date.now() + 15_000;
    const failed = (): string | undefined =>
      lines.find((l) => l.includes('"component":"opentelemetry"') && /"level":"(warn|error)"/.test(l));
    while (!failed() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(failed(), lines.join('')).toBeDefined();
    expect(JSON.parse(failed()!)).toMatchObject({
      msg: 'OpenTelemetry error (most often a failed export)',
      code: 'ECONNREFUSED',
    });
    expect(lines.join('')).not.toContain('collector-secret-789');
  });
});
