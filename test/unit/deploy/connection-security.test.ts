// The secured-connection variables: what the configuration accepts, what it refuses (with the variable to fix),
// and the kafkajs / ioredis options built from it. The live proof is test/integration/secured-connections.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { kafkaSecurityOptions } from '../../../src/kafka/kafka-client.ts';
import { redisSecurityOptions } from '../../../src/redis/connect.ts';

const base = {
  KAFKA_BROKERS: 'kafka-0.kafka:9093',
  REDIS_URL: 'rediss://redis.internal:6380',
  EXCHANGE_API_URL: 'https://exchange.example/api/v2',
  EXCHANGE_API_KEY_CEFI: 'cefi-key-value',
  WEBHOOK_SECRET: 'webhook-secret-value',
};
const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
let dir: string;
let caFile: string;
let notPem: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'eow-security-'));
  caFile = join(dir, 'ca.pem');
  notPem = join(dir, 'ca.txt');
  writeFileSync(caFile, pem);
  writeFileSync(notPem, 'just text');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('secured connection configuration', () => {
  it('leaves Kafka plain and Redis TLS-by-URL when nothing is set', () => {
    const config = loadConfig({ ...base, REDIS_URL: 'redis://redis:6379' });
    expect(config.security.kafka).toEqual({ tls: undefined, sasl: undefined });
    expect(kafkaSecurityOptions(config.security.kafka)).toEqual({});
    expect(redisSecurityOptions(config.security.redis)).toEqual({});
  });

  it('builds verified TLS and SCRAM options for kafkajs from files and secrets', () => {
    const config = loadConfig({
      ...base,
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: caFile,
      KAFKA_SSL_SERVERNAME: 'kafka.internal',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'worker',
      KAFKA_SASL_PASSWORD: 'sasl-password-value',
    });
    expect(kafkaSecurityOptions(config.security.kafka)).toEqual({
      ssl: { ca: pem, servername: 'kafka.internal', rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-512', username: 'worker', password: 'sasl-password-value' },
    });
  });

  it('reads an OAUTHBEARER token from its file at each authentication', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'first-token\n');
    const config = loadConfig({
      ...base,
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile,
    });
    const sasl = kafkaSecurityOptions(config.security.kafka).sasl as
      { mechanism: string; oauthBearerProvider?: () => Promise<{ value: string }> } | undefined;
    expect(sasl?.mechanism).toBe('oauthbearer');
    const provider = sasl?.oauthBearerProvider;
    if (!provider) throw new Error('no token provider');
    expect(await provider()).toEqual({ value: 'first-token' });
    writeFileSync(tokenFile, 'rotated-token\n');
    expect(await provider()).toEqual({ value: 'rotated-token' });
  });

  it('gives ioredis the CA, server name and ACL user for a rediss:// URL', () => {
    const config = loadConfig({
      ...base,
      REDIS_TLS_CA_FILE: caFile,
      REDIS_TLS_SERVERNAME: 'redis.internal',
      REDIS_USERNAME: 'worker',
      REDIS_PASSWORD: 'redis-password-value',
    });
    expect(redisSecurityOptions(config.security.redis)).toEqual({
      tls: { ca: pem, servername: 'redis.internal', rejectUnauthorized: true },
      username: 'worker',
      password: 'redis-password-value',
    });
  });

  it('refuses inconsistent settings, naming the variable to fix and never a secret', () => {
    const found = problems({
      REDIS_URL: 'redis://redis:6379',
      KAFKA_SSL_CA_FILE: caFile,
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_PASSWORD: 'sasl-password-value',
      REDIS_TLS_CA_FILE: caFile,
      REDIS_USERNAME: 'worker',
    });
    expect(found).toEqual(
      expect.arrayContaining([
        'KAFKA_SSL_CA_FILE: is set but KAFKA_SSL is not true',
        'KAFKA_SASL_USERNAME: is required with KAFKA_SASL_MECHANISM=plain',
        'KAFKA_SSL: must be true with KAFKA_SASL_MECHANISM=plain (it sends the password in clear)',
        'REDIS_TLS_CA_FILE: needs a rediss:// REDIS_URL',
        'REDIS_PASSWORD: is required with REDIS_USERNAME',
      ]),
    );
    expect(found.join('\n')).not.toContain('sasl-password-value');
  });

  it('sets min.insync.replicas of created topics only when asked, never above the replication factor', () => {
    expect(loadConfig(base).topics.minInsyncReplicas).toBeUndefined();
    expect(
      loadConfig({ ...base, TOPIC_REPLICATION_FACTOR: '3', TOPIC_MIN_INSYNC_REPLICAS: '2' }).topics,
    ).toMatchObject({ replicationFactor: 3, minInsyncReplicas: 2 });
    expect(problems({ TOPIC_MIN_INSYNC_REPLICAS: '2' })).toEqual([
      'TOPIC_MIN_INSYNC_REPLICAS: must not exceed TOPIC_REPLICATION_FACTOR (no write could ever succeed)',
    ]);
  });

  it('refuses unreadable and non-PEM certificate files and unknown mechanisms', () => {
    expect(problems({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: join(dir, 'missing.pem') })).toEqual([
      `KAFKA_SSL_CA_FILE: cannot read ${join(dir, 'missing.pem')} (ENOENT)`,
    ]);
    expect(problems({ REDIS_TLS_CA_FILE: notPem })).toEqual([
      `REDIS_TLS_CA_FILE: ${notPem} is not a PEM file`,
    ]);
    expect(problems({ KAFKA_SASL_MECHANISM: 'gssapi' })).toEqual([
      'KAFKA_SASL_MECHANISM: must be plain, scram-sha-256, scram-sha-512 or oauthbearer',
    ]);
    expect(problems({ KAFKA_SSL: 'yes' })).toEqual(['KAFKA_SSL: must be true or false']);
    expect(problems({ REDIS_URL: 'rediss://user:pw-in-url@redis:6380', REDIS_PASSWORD: 'other' })).toEqual([
      'REDIS_PASSWORD: give the Redis credentials either in REDIS_URL or in REDIS_USERNAME/REDIS_PASSWORD',
    ]);
  });
});
