// In production (NODE_ENV=production, as the worker image sets it) the configuration refuses what would send a
// secret in clear: a plain-http exchange URL (API keys, referral tokens) and a Redis password over redis://, unless
// ALLOW_INSECURE_TRANSPORT=true says this is a development deployment (then a warning at start). Outside production
// both stay accepted (npm start against the sandbox, tests, the demo).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configWarnings, loadConfig } from '../../../src/config.ts';
import { deployRoot } from './kustomize-renderer.ts';

const secure = {
  KAFKA_BROKERS: 'kafka-0.kafka:9093',
  REDIS_URL: 'rediss://redis.internal:6380',
  EXCHANGE_API_URL: 'https://exchange.example/api/v2',
  EXCHANGE_API_KEY_CEFI: 'cefi-key-value',
  WEBHOOK_SECRET: 'webhook-secret-value',
};

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...secure, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('transport security in production', () => {
  it('knows production from NODE_ENV=production, which the worker image sets', () => {
    const dockerfile = readFileSync(join(deployRoot, 'Dockerfile'), 'utf8');
    const workerStage = dockerfile.slice(dockerfile.indexOf('AS worker'));
    expect(workerStage).toMatch(/^ENV NODE_ENV=production$/m);
    expect(loadConfig({ ...secure, NODE_ENV: 'production' }).production).toBe(true);
    expect(loadConfig(secure).production).toBe(false);
  });

  it('refuses a plain-http exchange URL', () => {
    expect(problems({ NODE_ENV: 'production', EXCHANGE_API_URL: 'http://exchange.example/api/v2' })).toEqual([
      expect.stringMatching(/^EXCHANGE_API_URL: is plain http.*ALLOW_INSECURE_TRANSPORT=true/),
    ]);
    expect(
      problems({ NODE_ENV: 'production', EXCHANGE_API_V1_URL: 'http://exchange.example/api/v1' }),
    ).toEqual([expect.stringMatching(/^EXCHANGE_API_V1_URL: is plain http/)]);
  });

  it('refuses a Redis password over redis://, in REDIS_PASSWORD or in the URL, without echoing it', () => {
    expect(
      problems({ NODE_ENV: 'production', REDIS_URL: 'redis://redis:6379', REDIS_PASSWORD: 'hunter2-secret' }),
    ).toEqual([expect.stringMatching(/^REDIS_PASSWORD: a Redis password over redis:\/\/ travels in clear/)]);
    const inUrl = problems({ NODE_ENV: 'production', REDIS_URL: 'redis://worker:hunter2-secret@redis:6379' });
    expect(inUrl).toEqual([expect.stringMatching(/^REDIS_URL: a Redis password over redis:\/\//)]);
    expect(inUrl.join('\n')).not.toContain('hunter2');
    // No password: plain redis:// is not a secret in clear (a cluster-internal Redis without AUTH).
    expect(problems({ NODE_ENV: 'production', REDIS_URL: 'redis://redis:6379' })).toEqual([]);
  });

  it('accepts both with ALLOW_INSECURE_TRANSPORT=true, and warns at start', () => {
    const config = loadConfig({
      ...secure,
      NODE_ENV: 'production',
      ALLOW_INSECURE_TRANSPORT: 'true',
      EXCHANGE_API_URL: 'http://sandbox:8080/api/v2',
      REDIS_URL: 'redis://redis:6379',
      REDIS_PASSWORD: 'hunter2-secret',
    });
    const warnings = configWarnings(config, { createOrderTimeoutMs: 10_000 });
    expect(warnings).toEqual([
      expect.stringMatching(
        /^ALLOW_INSECURE_TRANSPORT=true with NODE_ENV=production: EXCHANGE_API_URL is plain http.*REDIS_PASSWORD/,
      ),
    ]);
    expect(warnings.join('\n')).not.toContain('hunter2');
  });

  it('accepts both outside production, where the sandbox runs on plain http', () => {
    expect(
      problems({
        EXCHANGE_API_URL: 'http://127.0.0.1:8080/api/v2',
        REDIS_URL: 'redis://127.0.0.1:6379',
        REDIS_PASSWORD: 'pw',
      }),
    ).toEqual([]);
  });
});
