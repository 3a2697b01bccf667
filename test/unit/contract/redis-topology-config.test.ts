// Where Redis is, as the configuration reads it: exactly one of REDIS_URL, REDIS_SENTINELS (+ REDIS_SENTINEL_NAME) and
// REDIS_CLUSTER_NODES, each problem named on its variable, secrets never echoed; and how many replicas must hold a
// lease before it is trusted.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadOperatorConfig, secretValues } from '../../../src/config.ts';

const base = {
  KAFKA_BROKERS: '127.0.0.1:9092',
  EXCHANGE_API_URL: 'http://127.0.0.1:8000/api/v2',
  EXCHANGE_API_KEY_DEFI: 'defi-secret-key',
  WEBHOOK_SECRET: 'whsec-one-0001',
};

function problems(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

const sentinels = { REDIS_SENTINELS: 's-0:26379, s-1:26379,s-2:26379', REDIS_SENTINEL_NAME: 'orders' };

describe('Redis topology configuration', () => {
  it('takes one endpoint from REDIS_URL, trusting the primary alone by default', () => {
    expect(loadConfig({ ...base, REDIS_URL: 'redis://127.0.0.1:6379' }).redis).toEqual({
      topology: { kind: 'standalone', url: 'redis://127.0.0.1:6379' },
      leaseReplication: { replicas: 0, timeoutMs: 300 },
    });
  });

  it('takes a Sentinel set, wanting one replica to acknowledge a lease by default', () => {
    expect(loadConfig({ ...base, ...sentinels }).redis).toEqual({
      topology: {
        kind: 'sentinel',
        sentinels: [
          { host: 's-0', port: 26379 },
          { host: 's-1', port: 26379 },
          { host: 's-2', port: 26379 },
        ],
        name: 'orders',
        tls: false,
        sentinelUsername: undefined,
        sentinelPassword: undefined,
      },
      leaseReplication: { replicas: 1, timeoutMs: 300 },
    });
  });

  it('takes a Cluster from its seed nodes, IPv6 included, and TLS when the entries say rediss://', () => {
    expect(
      loadConfig({ ...base, REDIS_CLUSTER_NODES: 'redis://10.0.0.1:7000,redis://[::1]:7001' }).redis.topology,
    ).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      tls: false,
    });
    const tls = loadConfig({ ...base, REDIS_CLUSTER_NODES: 'rediss://r-0:6380,rediss://r-1:6380' });
    expect(tls.redis.topology).toMatchObject({ kind: 'cluster', tls: true });
    expect(tls.security.redis.tls).toBeDefined();
  });

  it('lets the operator set how many replicas must acknowledge a lease, and how long to wait for them', () => {
    const config = loadConfig({
      ...base,
      ...sentinels,
      REDIS_LEASE_MIN_REPLICAS: '0',
      REDIS_LEASE_REPLICA_TIMEOUT_MS: '50',
    });
    expect(config.redis.leaseReplication).toEqual({ replicas: 0, timeoutMs: 50 });
    expect(
      loadConfig({ ...base, REDIS_URL: 'redis://r:6379', REDIS_LEASE_MIN_REPLICAS: '2' }).redis
        .leaseReplication,
    ).toEqual({ replicas: 2, timeoutMs: 300 });
    expect(
      problems({ ...sentinels, REDIS_LEASE_MIN_REPLICAS: '11', REDIS_LEASE_REPLICA_TIMEOUT_MS: '1000' }),
    ).toEqual([
      'REDIS_LEASE_MIN_REPLICAS: Too big: expected number to be <=10',
      'REDIS_LEASE_REPLICA_TIMEOUT_MS: Too big: expected number to be <=900',
    ]);
  });

  it('wants exactly one topology, and says which', () => {
    expect(problems({})).toEqual([
      'REDIS_URL: is required (or REDIS_SENTINELS with REDIS_SENTINEL_NAME for a Sentinel set, or REDIS_CLUSTER_NODES for a Cluster)',
    ]);
    expect(problems({ REDIS_URL: 'redis://r:6379', ...sentinels })).toEqual([
      'REDIS_SENTINELS: give exactly one Redis topology (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES); found REDIS_URL and REDIS_SENTINELS',
    ]);
    expect(problems({ ...sentinels, REDIS_CLUSTER_NODES: 'r:7000' })).toEqual([
      'REDIS_CLUSTER_NODES: give exactly one Redis topology (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES); found REDIS_SENTINELS and REDIS_CLUSTER_NODES',
    ]);
    // Set but empty (a Kubernetes manifest's habit) counts as unset.
    expect(problems({ REDIS_URL: '', REDIS_CLUSTER_NODES: 'r:7000' })).toEqual([]);
  });

  it('reports a missing topology together with every other problem', () => {
    expect(problems({ POLL_INTERVAL_MS: '500' })).toEqual([
      'REDIS_URL: is required (or REDIS_SENTINELS with REDIS_SENTINEL_NAME for a Sentinel set, or REDIS_CLUSTER_NODES for a Cluster)',
      'POLL_INTERVAL_MS: Too small: expected number to be >=30000',
    ]);
  });

  it('needs the Sentinel name with the sentinels, and the Sentinel variables only with them', () => {
    expect(problems({ REDIS_SENTINELS: 's-0:26379' })).toEqual([
      'REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS (the name the sentinels monitor)',
    ]);
    expect(
      problems({
        REDIS_URL: 'redis://r:6379',
        REDIS_SENTINEL_NAME: 'orders',
        REDIS_SENTINEL_PASSWORD: 'sentinel-secret-value',
      }),
    ).toEqual([
      'REDIS_SENTINEL_NAME: is set but REDIS_SENTINELS is not',
      'REDIS_SENTINEL_PASSWORD: is set but REDIS_SENTINELS is not',
    ]);
    expect(problems({ ...sentinels, REDIS_SENTINEL_USERNAME: 'watcher' })).toEqual([
      'REDIS_SENTINEL_PASSWORD: is required with REDIS_SENTINEL_USERNAME',
    ]);
    expect(problems({ ...sentinels, REDIS_SENTINEL_NAME: 'my master' })).toEqual([
      'REDIS_SENTINEL_NAME: letters, digits, . _ - only (the name Sentinel monitors)',
    ]);
  });

  it('refuses malformed node lists, naming the entry', () => {
    expect(problems({ REDIS_CLUSTER_NODES: 'r-0:7000,r-1' })).toEqual([
      'REDIS_CLUSTER_NODES: each entry must be host:port (optionally redis:// or rediss://), got "r-1"',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: 'r-0:70000' })).toEqual([
      'REDIS_CLUSTER_NODES: each entry must be host:port (optionally redis:// or rediss://), got "r-0:70000"',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: 'http://r-0:7000' })).toEqual([
      'REDIS_CLUSTER_NODES: each entry must be host:port (optionally redis:// or rediss://), got "http://r-0:7000"',
    ]);
    expect(problems({ ...sentinels, REDIS_SENTINELS: 'rediss://s-0:26379,s-1:26379' })).toEqual([
      'REDIS_SENTINELS: mixes rediss:// entries with plain ones: use one for all',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: ' , ' })).toEqual([
      'REDIS_CLUSTER_NODES: needs at least one host:port',
    ]);
  });

  it('applies the TLS variables to whichever topology is rediss://, and refuses them without TLS', () => {
    const dir = mkdtempSync(join(tmpdir(), 'redis-topology-'));
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(problems({ ...sentinels, REDIS_TLS_CA_FILE: ca })).toEqual([
      'REDIS_TLS_CA_FILE: needs a rediss:// REDIS_SENTINELS',
    ]);
    const config = loadConfig({
      ...base,
      ...sentinels,
      REDIS_SENTINELS: 'rediss://s-0:26380,rediss://s-1:26380',
      REDIS_TLS_CA_FILE: ca,
    });
    expect(config.redis.topology).toMatchObject({ kind: 'sentinel', tls: true });
    expect(config.security.redis.tls?.ca).toContain('BEGIN CERTIFICATE');
  });

  it('treats the Sentinel password as a secret: never echoed, always scrubbed', () => {
    const config = loadConfig({
      ...base,
      ...sentinels,
      REDIS_SENTINEL_USERNAME: 'watcher',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret-value',
    });
    expect(config.redis.topology).toMatchObject({
      sentinelUsername: 'watcher',
      sentinelPassword: 'sentinel-secret-value',
    });
    expect(secretValues(config)).toContain('sentinel-secret-value');
    const found = problems({ REDIS_URL: 'redis://r:6379', REDIS_SENTINEL_PASSWORD: 'sentinel-secret-value' });
    expect(found.join('\n')).not.toContain('sentinel-secret-value');
  });

  it('gives the operator tools (the inspector) the same topology', () => {
    const { KAFKA_BROKERS } = base;
    expect(loadOperatorConfig({ KAFKA_BROKERS, REDIS_CLUSTER_NODES: 'r:7000' }).redis.topology).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'r', port: 7000 }],
      tls: false,
    });
    expect(() => loadOperatorConfig({ KAFKA_BROKERS })).toThrow(/REDIS_URL: is required/);
  });
});
