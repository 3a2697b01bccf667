import { describe, expect, it } from 'vitest';
import { ConfigError, configWarnings, loadConfig, secretValues } from '../../../src/config.ts';

const valid = {
  KAFKA_BROKERS: '127.0.0.1:9092, 127.0.0.1:9093',
  REDIS_URL: 'redis://127.0.0.1:6379',
  EXCHANGE_API_URL: 'http://127.0.0.1:8000/api/v2/',
  EXCHANGE_API_KEY_DEFI: 'defi-secret-key',
  WEBHOOK_SECRET: 'whsec-one-0001',
};

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('configuration', () => {
  it('warns when the create settle window is shorter than the create timeout plus the lease ttl', () => {
    const facts = { createOrderTimeoutMs: 30_000 };
    expect(configWarnings(loadConfig(valid), facts)).toEqual([]);
    expect(
      configWarnings(loadConfig({ ...valid, CREATE_SETTLE_MS: '45000', LEASE_TTL_MS: '15000' }), facts),
    ).toEqual([]);
    const [warning, ...more] = configWarnings(
      loadConfig({ ...valid, CREATE_SETTLE_MS: '8000', LEASE_TTL_MS: '6000' }),
      facts,
    );
    expect(more).toEqual([]);
    expect(warning).toContain('CREATE_SETTLE_MS (8000)');
    expect(warning).toContain('use at least 36000');
  });

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
    expect(config.exchange.currencyCatalogRefreshMs).toBe(3_600_000);
  });

  it('bounds the currency catalog refresh interval to at least a minute and at most a day', () => {
    expect(
      loadConfig({ ...valid, CURRENCY_CATALOG_REFRESH_MS: '60000' }).exchange.currencyCatalogRefreshMs,
    ).toBe(60_000);
    expect(() => loadConfig({ ...valid, CURRENCY_CATALOG_REFRESH_MS: '59999' })).toThrow(
      /CURRENCY_CATALOG_REFRESH_MS: Too small/,
    );
    expect(() => loadConfig({ ...valid, CURRENCY_CATALOG_REFRESH_MS: '86400001' })).toThrow(
      /CURRENCY_CATALOG_REFRESH_MS: Too big/,
    );
  });

  it('lists CeFi orders every 30 s by default, at most every 60 s, and not at all at 0', () => {
    expect(loadConfig(valid).listReconcileIntervalMs).toBe(30_000);
    expect(loadConfig({ ...valid, LIST_RECONCILE_INTERVAL_MS: '0' }).listReconcileIntervalMs).toBe(0);
    expect(loadConfig({ ...valid, LIST_RECONCILE_INTERVAL_MS: '60000' }).listReconcileIntervalMs).toBe(
      60_000,
    );
    for (const refused of ['60001', '1000', '-1', 'often'])
      expect(problemsOf({ ...valid, LIST_RECONCILE_INTERVAL_MS: refused })).toEqual([
        expect.stringMatching(/^LIST_RECONCILE_INTERVAL_MS: /),
      ]);
  });

  it('coalesces webhooks for 3 s (at most 10 s) by default, 0 to 10 s (max 30 s), the max never below the quiet time', () => {
    expect(loadConfig(valid)).toMatchObject({ webhookCoalesceMs: 3_000, webhookCoalesceMaxMs: 10_000 });
    expect(loadConfig({ ...valid, WEBHOOK_COALESCE_MS: '0' }).webhookCoalesceMs).toBe(0);
    expect(
      loadConfig({ ...valid, WEBHOOK_COALESCE_MS: '8000', WEBHOOK_COALESCE_MAX_MS: '2000' }),
    ).toMatchObject({ webhookCoalesceMs: 8_000, webhookCoalesceMaxMs: 8_000 });
    for (const refused of ['10001', '-1', 'soon'])
      expect(problemsOf({ ...valid, WEBHOOK_COALESCE_MS: refused })).toEqual([
        expect.stringMatching(/^WEBHOOK_COALESCE_MS: /),
      ]);
    expect(problemsOf({ ...valid, WEBHOOK_COALESCE_MAX_MS: '30001' })).toEqual([
      expect.stringMatching(/^WEBHOOK_COALESCE_MAX_MS: /),
    ]);
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

  it('takes the consumer group session timeout, 15 s by default and never under the broker default minimum of 6 s', () => {
    expect(loadConfig(valid).kafkaSessionTimeoutMs).toBe(15_000);
    expect(loadConfig({ ...valid, KAFKA_SESSION_TIMEOUT_MS: '6000' }).kafkaSessionTimeoutMs).toBe(6_000);
    expect(() => loadConfig({ ...valid, KAFKA_SESSION_TIMEOUT_MS: '5999' })).toThrow(
      /KAFKA_SESSION_TIMEOUT_MS: Too small/,
    );
  });

  it('bounds the command size limit (MAX_COMMAND_BYTES, 64 KiB by default)', () => {
    expect(loadConfig(valid).maxCommandBytes).toBe(65_536);
    expect(loadConfig({ ...valid, MAX_COMMAND_BYTES: '4096' }).maxCommandBytes).toBe(4_096);
    expect(() => loadConfig({ ...valid, MAX_COMMAND_BYTES: '100' })).toThrow(/MAX_COMMAND_BYTES/);
  });

  it('requires a webhook signing secret unless unsigned webhooks are explicitly allowed', () => {
    const { WEBHOOK_SECRET: _secret, ...unsigned } = valid;
    expect(problemsOf(unsigned)).toEqual([
      expect.stringMatching(/^WEBHOOK_SECRET: a webhook signing secret .* WEBHOOK_ALLOW_UNSIGNED=true/),
    ]);
    expect(problemsOf({ ...unsigned, WEBHOOK_SECRETS: ' , ' })).toHaveLength(1);
    const allowed = loadConfig({ ...unsigned, WEBHOOK_ALLOW_UNSIGNED: 'true' });
    expect(allowed.webhooks).toMatchObject({ secrets: [], allowUnsigned: true });
    expect(problemsOf({ ...unsigned, WEBHOOK_ALLOW_UNSIGNED: 'yes' })).toContain(
      'WEBHOOK_ALLOW_UNSIGNED: must be true or false',
    );
    expect(problemsOf({ ...valid, WEBHOOK_ALLOW_UNSIGNED: 'true' })).toEqual([
      expect.stringMatching(
        /^WEBHOOK_ALLOW_UNSIGNED: must not be true while a webhook signing secret is set/,
      ),
    ]);
    expect(loadConfig({ ...valid, WEBHOOK_ALLOW_UNSIGNED: 'false' }).webhooks.allowUnsigned).toBe(false);
  });

  it('accepts several webhook signing secrets, in order and without repeats, and never echoes them', () => {
    const config = loadConfig({
      ...valid,
      WEBHOOK_SECRETS: ' whsec-two-0002 ,whsec-one-0001,, whsec-three-0003 ',
    });
    expect(config.webhooks.secrets).toEqual(['whsec-one-0001', 'whsec-two-0002', 'whsec-three-0003']);
    const { WEBHOOK_SECRET: _secret, ...listOnly } = valid;
    expect(loadConfig({ ...listOnly, WEBHOOK_SECRETS: 'whsec-two-0002' }).webhooks.secrets).toEqual([
      'whsec-two-0002',
    ]);
    const problems = problemsOf({ ...valid, WEBHOOK_SECRETS: 'whsec-two-0002', HTTP_PORT: '-1' });
    expect(problems.join('\n')).not.toMatch(/whsec/);
  });

  it('serves webhooks and operations on two different ports', () => {
    expect(loadConfig(valid)).toMatchObject({ httpPort: 8080, metricsPort: 9464 });
    expect(loadConfig({ ...valid, HTTP_PORT: '8081', METRICS_PORT: '9100' })).toMatchObject({
      httpPort: 8081,
      metricsPort: 9100,
    });
    expect(problemsOf({ ...valid, METRICS_PORT: '8080' })).toEqual([
      expect.stringMatching(/^METRICS_PORT: must differ from HTTP_PORT/),
    ]);
    expect(problemsOf({ ...valid, HTTP_PORT: '0', METRICS_PORT: '0' })).toEqual([]);
    expect(problemsOf({ ...valid, METRICS_PORT: '70000' })[0]).toMatch(/^METRICS_PORT:/);
  });

  it('takes a referral token per trading mode beside the shared one', () => {
    const config = loadConfig({
      ...valid,
      EXCHANGE_REFERRAL_TOKEN: 'shared-token',
      EXCHANGE_REFERRAL_TOKEN_CEFI: ' cefi-token ',
      EXCHANGE_REFERRAL_TOKEN_DEFI: '',
    });
    expect(config.exchange.referralToken).toBe('shared-token');
    expect(config.exchange.referralTokens).toEqual({
      defi: undefined,
      cefi: 'cefi-token',
      cefi_fixed: undefined,
    });
  });

  it('lists every secret value for the log scrubber, the Redis password included', () => {
    const config = loadConfig({
      ...valid,
      REDIS_URL: 'redis://worker:p%40ss-word-77@redis:6379',
      EXCHANGE_REFERRAL_TOKEN: 'shared-token',
      EXCHANGE_REFERRAL_TOKEN_CEFI_FIXED: 'fixed-token',
      WEBHOOK_SECRETS: 'whsec-two-0002',
    });
    expect(secretValues(config).sort()).toEqual(
      [
        'defi-secret-key',
        'shared-token',
        'fixed-token',
        'whsec-one-0001',
        'whsec-two-0002',
        'p@ss-word-77',
      ].sort(),
    );
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
