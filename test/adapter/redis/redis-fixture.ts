// Redis for a test file: a redis-server of its own (so a test may kill and restart it), a Sentinel set or a Cluster
// (dev/services/redis-ha-local.ts), plus clients with unique key prefixes, all cleaned up after the file. The suites
// of test/adapter/redis/suites/ take any of them: the same assertions on every topology.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  startLocalRedisCluster,
  startLocalSentinelSet,
  type LocalRedisCluster,
  type LocalSentinelSet,
} from '../../../dev/services/redis-ha-local.ts';
import { canConnect } from '../../../dev/services/process-util.ts';
import { startLocalRedis, type LocalRedis } from '../../../dev/services/redis-local.ts';
import type { WorkerError } from '../../../src/errors.ts';
import type { RedisTopology } from '../../../src/config/redis-topology.ts';
import { closeRedis, createRedis, whenRedisReady, type RedisClient } from '../../../src/redis/connect.ts';
import type { OrderLeaseOptions } from '../../../src/redis/order-lease.ts';
import { replicaAcks } from '../../../src/redis/replica-acks.ts';
import { uniqueName } from '../../support/services.ts';

export type RedisTopologyKind = RedisTopology['kind'];

export interface RedisFixture {
  readonly kind: RedisTopologyKind;
  /**
   * The one server of a standalone Redis, to stop, restart empty or pause; undefined for a Sentinel set or a Cluster
   * (their outages are failovers, which their own tests drive).
   */
  readonly server: (() => LocalRedis) | undefined;
  /** A ready client; pass the same prefix to make two clients share keys (two replicas). */
  client(opts?: { keyPrefix?: string; commandTimeoutMs?: number }): Promise<RedisClient>;
  prefix(): string;
  /** Connection errors seen by every client of this file. */
  readonly connectionErrors: WorkerError[];
  /** OrderLease options as the worker sets them on this topology: with replicas, a grant counts once one has it. */
  leaseOptions(client: RedisClient): OrderLeaseOptions;
  /** The keys matching `pattern` on every primary (a Cluster client sends KEYS to one node only). */
  keys(pattern: string): Promise<string[]>;
}

/** How long a grant waits for its replica in the HA suites (the worker's default). */
const replicaTimeoutMs = 300;

function clientsOf(
  kind: RedisTopologyKind,
  where: () => string | RedisTopology,
): Omit<RedisFixture, 'kind' | 'server'> & { closeAll(): Promise<void> } {
  const clients: RedisClient[] = [];
  const connectionErrors: WorkerError[] = [];
  const client: RedisFixture['client'] = async (opts = {}) => {
    const made = createRedis(where(), {
      keyPrefix: opts.keyPrefix ?? `${uniqueName('t')}:`,
      onError: (error) => connectionErrors.push(error),
      ...(opts.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: opts.commandTimeoutMs }),
      maxReconnectDelayMs: 200,
    });
    clients.push(made);
    await whenRedisReady(made, 15_000);
    return made;
  };
  return {
    client,
    prefix: () => `${uniqueName('t')}:`,
    connectionErrors,
    leaseOptions(made) {
      if (kind === 'standalone') return {};
      const acks = replicaAcks(made, { replicas: 1, timeoutMs: replicaTimeoutMs });
      return acks ? { replicaAcks: acks } : {};
    },
    async keys(pattern) {
      const admin = await client({ keyPrefix: '' });
      const primaries: Array<Redis | Cluster> = admin instanceof Cluster ? admin.nodes('master') : [admin];
      return (await Promise.all(primaries.map((node) => node.keys(pattern)))).flat();
    },
    async closeAll() {
      for (const made of clients.splice(0)) await closeRedis(made);
    },
  };
}

export function useOwnRedis(): RedisFixture & { server: () => LocalRedis } {
  let dir = '';
  let server: LocalRedis | undefined;
  const clients = clientsOf('standalone', () => {
    if (!server) throw new Error('redis-server not started yet');
    return server.url;
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'redis-adapter-'));
    server = await startLocalRedis({ dir });
  });
  afterEach(async () => {
    // A test that stopped the server leaves it running again for the next one.
    if (server && !(await pingable(server))) await server.start();
  });
  afterAll(async () => {
    await clients.closeAll();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  return {
    kind: 'standalone',
    server: () => {
      if (!server) throw new Error('redis-server not started yet');
      return server;
    },
    ...clients,
  };
}

/** A Sentinel set of the file's own: one primary, one replica, three sentinels. */
export function useSentinelSet(): RedisFixture & { set(): LocalSentinelSet } {
  let dir = '';
  let set: LocalSentinelSet | undefined;
  const running = (): LocalSentinelSet => {
    if (!set) throw new Error('the Sentinel set is not started yet');
    return set;
  };
  const clients = clientsOf('sentinel', () => running().topology);
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
    set = await startLocalSentinelSet({ dir });
  });
  afterAll(async () => {
    await clients.closeAll();
    await set?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { kind: 'sentinel', server: undefined, set: running, ...clients };
}

/** A Redis Cluster of the file's own: three primaries with a replica each. */
export function useRedisCluster(): RedisFixture & { cluster(): LocalRedisCluster } {
  let dir = '';
  let cluster: LocalRedisCluster | undefined;
  const running = (): LocalRedisCluster => {
    if (!cluster) throw new Error('the Redis Cluster is not started yet');
    return cluster;
  };
  const clients = clientsOf('cluster', () => running().topology);
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
    cluster = await startLocalRedisCluster({ dir });
  });
  afterAll(async () => {
    await clients.closeAll();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { kind: 'cluster', server: undefined, cluster: running, ...clients };
}

function pingable(server: LocalRedis): Promise<boolean> {
  return canConnect(server.port);
}

/** Polls until `check` holds (for reconnects and timers), failing with `what` after timeoutMs. */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(25);
  }
}

/** Waits until the client answers commands again after the server came back (it reconnects on its own). */
export async function reconnected(client: RedisClient): Promise<void> {
  await eventually(
    'client reconnected',
    () =>
      client.ping().then(
        () => true,
        () => false,
      ),
    15_000,
  );
}
