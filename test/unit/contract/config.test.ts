import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.ts';

const valid = {
  KAFKA_BROKERS: '127.0.0.1:9092, 127.0.0.1:9093',
  REDIS_URL: 'redis://127.0.0.1:6379',
  EXCHANGE_API_URL: 'http://127.0.0.1:8000/api/v2/',
  EXCHANGE_API_KEY_DEFI: 'defi-secret-key',
};

describe('configuration', () => {
  it('parses the environment once into a frozen object with documented defaults', () => {
    const config = loadConfig(valid);
    expect(config.kafkaBrokers).toEqual(['127.0.0.1:9092', '127.0.0.1:9093']);
    expect(config.exchange.baseUrl).toBe('http://127.0.0.1:8000/api/v2');
    expect(config.topics).toMatchObject({
      commands: 'exchange.orders.commands',
      events: 'exchange.orders.events',
      state: 'exchange.orders.commands.state',
    });
    expect(Object.isFrozen(config.exchange.credentials)).toBe(true);
  });

  it('reports one line per problem and never echoes a secret', () => {
    try {
      loadConfig({
        REDIS_URL: 'http://nope',
        EXCHANGE_API_URL: 'ftp://x',
        HTTP_PORT: 'abc',
        WEBHOOK_SECRET: 'super-secret-value',
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems;
      expect(problems.some((p) => p.startsWith('KAFKA_BROKERS:'))).toBe(true);
      expect(problems.some((p) => p.startsWith('REDIS_URL:'))).toBe(true);
      expect(problems.some((p) => p.startsWith('EXCHANGE_API_URL:'))).toBe(true);
      expect(problems.some((p) => p.startsWith('HTTP_PORT:'))).toBe(true);
      expect(problems.some((p) => p.includes('at least one of EXCHANGE_API_KEY_DEFI'))).toBe(true);
      expect((error as Error).message).not.toContain('super-secret-value');
    }
  });

  it('validates the standard OTEL_* variables and exports traces only when an exporter or endpoint is named', () => {
    expect(loadConfig(valid).telemetry.exportTraces).toBe(false);
    expect(
      loadConfig({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' }).telemetry,
    ).toMatchObject({
      exportTraces: true,
      serviceName: undefined,
    });
    expect(loadConfig({ ...valid, OTEL_TRACES_EXPORTER: 'console' }).telemetry.exportTraces).toBe(true);
    expect(
      loadConfig({
        ...valid,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318',
        OTEL_TRACES_EXPORTER: 'none',
      }).telemetry.exportTraces,
    ).toBe(false);
    expect(
      loadConfig({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318', OTEL_SDK_DISABLED: 'true' })
        .telemetry.exportTraces,
    ).toBe(false);
    const config = loadConfig({
      ...valid,
      OTEL_SERVICE_NAME: 'orders-eu',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token-123,x-tenant=a',
    });
    expect(config.telemetry.serviceName).toBe('orders-eu');
    expect(config.telemetry.exporterHeaderValues).toEqual(['Bearer%20collector-token-123', 'a']);
    try {
      loadConfig({
        ...valid,
        OTEL_TRACES_EXPORTER: 'otlp,jaeger-thrift',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http',
        OTEL_EXPORTER_OTLP_HEADERS: 'collector-token-456',
      });
      expect.unreachable();
    } catch (error) {
      const problems = (error as ConfigError).problems;
      for (const variable of [
        'OTEL_TRACES_EXPORTER',
        'OTEL_TRACES_SAMPLER',
        'OTEL_EXPORTER_OTLP_PROTOCOL',
        'OTEL_EXPORTER_OTLP_HEADERS',
      ])
        expect(problems.some((p) => p.startsWith(`${variable}:`))).toBe(true);
      expect((error as Error).message).not.toContain('collector-token-456');
    }
  });
});
