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

  it('bounds the command size limit (MAX_COMMAND_BYTES, 64 KiB by default)', () => {
    expect(loadConfig(valid).maxCommandBytes).toBe(65_536);
    expect(loadConfig({ ...valid, MAX_COMMAND_BYTES: '4096' }).maxCommandBytes).toBe(4_096);
    expect(() => loadConfig({ ...valid, MAX_COMMAND_BYTES: '100' })).toThrow(/MAX_COMMAND_BYTES/);
  });
});
