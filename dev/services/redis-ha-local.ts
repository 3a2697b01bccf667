// Redis with high availability from local redis-server processes, for tests: a Sentinel set (one primary, one replica,
// three sentinels) and a Cluster (three primaries, a replica each), each on free ports in a directory of its own, with
// the failovers a test drives (Sentinel's forced failover, a killed primary, the Cluster's manual failover). The
// Sentinel set's first primary is reached through a relay (by the sentinels, its replica and the clients alike, so
// the sentinels see one consistent address) whose replication stream can be held: writes the primary answered that
// the replica never gets, as when a failover loses the last writes.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import type { RedisTopology } from '../../src/config/redis-topology.ts';
import {
  canConnect,
  freePort,
  isAlive,
  killAndWait,
  spawnDetached,
  tailFile,
  waitUntil,
} from './process-util.ts';
import { assertRedisBinary, startLocalRedis, type LocalRedis } from './redis-local.ts';

const run = promisify(execFile);

/** A short-lived admin connection to one node or sentinel: the command's answer, or the error it raised. */
async function ask(port: number, ...command: Array<string | number>): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.call(String(command[0]), ...command.slice(1).map(String));
  } finally {
    client.disconnect();
  }
}

/** Like ask, but undefined instead of an error (a node being restarted, a sentinel not answering yet). */
async function tryAsk(port: number, ...command: Array<string | number>): Promise<unknown> {
  return ask(port, ...command).catch(() => undefined);
}

/** A command answered with text (INFO, CLUSTER INFO, CLUSTER NODES), or '' when it was not. */
async function askText(port: number, ...command: Array<string | number>): Promise<string> {
  const reply = await tryAsk(port, ...command);
  return typeof reply === 'string' ? reply : '';
}

/** `INFO <section>` as a map. */
async function info(port: number, section: string): Promise<Map<string, string>> {
  const text = await askText(port, 'INFO', section);
  return new Map(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':'))
      .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)] as const),
  );
}

/**
 * Whether the node is a primary with at least `replicas` replicas online, which acknowledge its writes (the sentinels'
 * hello messages keep the offset moving, so "caught up" is that, not an equal offset).
 */
async function primaryWithReplicas(port: number, replicas: number): Promise<boolean> {
  const fields = await info(port, 'replication');
  if (fields.get('role') !== 'master') return false;
  let online = 0;
  for (const [key, value] of fields)
    if (/^slave\d+$/.test(key) && value.includes('state=online') && Number(/lag=(\d+)/.exec(value)?.[1]) <= 1)
      online++;
  // Online is not yet acknowledging: a write must be seen to reach them.
  return online >= replicas && (await replicatesWrites(port, replicas));
}

/** A key the node on `port` may write: any key, or on a Cluster node one of a slot it serves. */
async function probeKey(port: number): Promise<string> {
  if ((await info(port, 'cluster')).get('cluster_enabled') !== '1') return 'redis-ha-local:probe';
  const ranges = ((await tryAsk(port, 'CLUSTER', 'SLOTS')) ?? []) as Array<[number, number, unknown[]]>;
  const own = ranges.filter(([, , primary]) => Number(primary[1]) === port);
  for (let i = 0; i < 100_000; i++) {
    const key = `redis-ha-local:probe:${i}`;
    const slot = calculateSlot(key);
    if (own.some(([from, to]) => slot >= from && slot <= to)) return key;
  }
  return 'redis-ha-local:probe';
}

/** Whether a write on the primary `port` reaches `replicas` replicas now (SET then WAIT, on one connection). */
async function replicatesWrites(port: number, replicas: number): Promise<boolean> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.set(await probeKey(port), String(Date.now()));
    return Number(await client.call('WAIT', String(replicas), '500')) >= replicas;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * A TCP relay to a primary. `hold()` stops passing on the primary's replication stream to a replica (a connection that
 * sent REPLCONF or PSYNC), while the replica's acknowledgements still reach the primary, so WAIT sees the replica
 * behind; every other connection flows as before. `cut()` drops every connection with what was held, which the
 * replica then never receives.
 */
class ReplicationRelay {
  readonly #server: net.Server;
  readonly #pairs = new Set<{ downstream: net.Socket; primary: net.Socket; replication: boolean }>();
  #held = false;
  readonly port: number;

  private constructor(server: net.Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async start(primaryPort: number): Promise<ReplicationRelay> {
    const port = await freePort();
    const server = net.createServer();
    const relay = new ReplicationRelay(server, port);
    server.on('connection', (downstream) => relay.#relay(downstream, primaryPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    return relay;
  }

  #relay(downstream: net.Socket, primaryPort: number): void {
    const primary = net.connect({ port: primaryPort, host: '127.0.0.1' });
    // Without it, Nagle's algorithm meets delayed acknowledgements: 40 ms for every small reply (a WAIT's GETACK).
    downstream.setNoDelay(true);
    primary.setNoDelay(true);
    const pair = { downstream, primary, replication: false };
    this.#pairs.add(pair);
    const drop = (): void => {
      this.#pairs.delete(pair);
      downstream.destroy();
      primary.destroy();
    };
    downstream.on('error', drop).on('close', drop);
    primary.on('error', drop).on('close', drop);
    downstream.on('data', (chunk: Buffer) => {
      if (!pair.replication && /REPLCONF|PSYNC/i.test(chunk.toString('latin1'))) {
        pair.replication = true;
        if (this.#held) this.#holdPair(pair);
      }
    });
    downstream.pipe(primary);
    primary.pipe(downstream);
  }

  #holdPair(pair: { downstream: net.Socket; primary: net.Socket }): void {
    pair.primary.unpipe(pair.downstream);
    pair.primary.pause();
  }

  hold(): void {
    this.#held = true;
    for (const pair of this.#pairs) if (pair.replication) this.#holdPair(pair);
  }

  release(): void {
    this.#held = false;
    for (const pair of this.#pairs) if (pair.replication) pair.primary.pipe(pair.downstream);
  }

  cut(): void {
    for (const { primary, downstream } of this.#pairs) {
      primary.destroy();
      downstream.destroy();
    }
    this.#pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export interface LocalSentinelSet {
  readonly name: string;
  readonly topology: Extract<RedisTopology, { kind: 'sentinel' }>;
  /** The port of the primary the sentinels name now (the first primary's is its relay's). */
  primaryPort(): Promise<number>;
  /** The data nodes (the first one starts as the primary), by port. */
  readonly nodes: readonly LocalRedis[];
  /** The first primary's replication stream to its replica (while it is the primary). */
  readonly replication: { hold(): void; release(): void; cut(): void };
  /** SENTINEL FAILOVER: the replica is promoted, the old primary follows it; resolves once the set is whole again. */
  failover(): Promise<void>;
  /** SIGKILLs the primary and waits until the sentinels promoted the replica; the killed node stays down. */
  killPrimary(): Promise<LocalRedis>;
  /** Starts a killed node again (empty) and waits until it follows the primary, caught up. */
  restart(node: LocalRedis): Promise<void>;
  stop(): Promise<void>;
}

/** Tuned for tests: a primary is down after 1 s of silence, and a failover may follow another after 4 s. */
function sentinelConfig(port: number, dir: string, name: string, primaryPort: number): string {
  return [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
    `sentinel down-after-milliseconds ${name} 1000`,
    `sentinel failover-timeout ${name} 2000`,
    `sentinel parallel-syncs ${name} 1`,
    '',
  ].join('\n');
}

export async function startLocalSentinelSet(opts: { dir: string; name?: string }): Promise<LocalSentinelSet> {
  assertRedisBinary();
  const name = opts.name ?? 'mymaster';
  // A replica (re)joining is sent the data at once, not after the default 5 s wait for more replicas.
  const syncAtOnce = ['--repl-diskless-sync-delay', '0'];
  const primary = await startLocalRedis({ dir: join(opts.dir, 'node-0'), args: syncAtOnce });
  const relay = await ReplicationRelay.start(primary.port);
  const replica = await startLocalRedis({
    dir: join(opts.dir, 'node-1'),
    args: [...syncAtOnce, '--replicaof', '127.0.0.1', String(relay.port)],
  });
  const nodes = [primary, replica];
  const sentinels: Array<{ port: number; pid: number; log: string }> = [];
  const stop = async (): Promise<void> => {
    await Promise.all(sentinels.map((s) => killAndWait(s.pid, 'SIGKILL')));
    await Promise.all(nodes.map((node) => node.stop('SIGKILL')));
    await relay.close();
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = join(opts.dir, `sentinel-${i}`);
      mkdirSync(dir, { recursive: true });
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(conf, sentinelConfig(port, dir, name, relay.port));
      const log = join(dir, 'sentinel.log');
      const pid = spawnDetached(process.env['REDIS_SERVER_BIN'] ?? 'redis-server', [conf, '--sentinel'], {
        logFile: log,
      });
      sentinels.push({ port, pid, log });
    }
    for (const s of sentinels)
      await waitUntil(
        `sentinel on port ${s.port}`,
        async () => isAlive(s.pid) && (await canConnect(s.port)),
        15_000,
        () => tailFile(s.log),
      );
    await waitUntil('the replica in sync', () => primaryWithReplicas(primary.port, 1), 20_000);
    // The first primary is known by its relay's address (see above).
    // Each sentinel must know the replica (to promote it) and the two other sentinels (to agree on a failover).
    await waitUntil(
      'the sentinels know the replica and each other',
      async () => {
        for (const s of sentinels) {
          const replicas = (await tryAsk(s.port, 'SENTINEL', 'REPLICAS', name)) as unknown[] | undefined;
          const peers = (await tryAsk(s.port, 'SENTINEL', 'SENTINELS', name)) as unknown[] | undefined;
          if (replicas?.length !== 1 || peers?.length !== 2) return false;
          if (String(replicas[0]).includes('disconnected') || JSON.stringify(replicas[0]).includes('s_down'))
            return false;
        }
        return true;
      },
      30_000,
      () => sentinels.map((s) => tailFile(s.log, 10)).join('\n'),
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = new Map<number, LocalRedis>([
    ...nodes.map((node) => [node.port, node] as const),
    [relay.port, primary],
  ]);
  const primaryPort = async (): Promise<number> => {
    for (const s of sentinels) {
      const address = (await tryAsk(s.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as
        string[] | undefined;
      if (address?.[1]) return Number(address[1]);
    }
    throw new Error('no sentinel names a primary');
  };
  /** Every sentinel names `port` as the primary, and it answers as one. */
  const settledOn = async (port: number): Promise<boolean> => {
    for (const s of sentinels) {
      const address = (await tryAsk(s.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as
        string[] | undefined;
      if (Number(address?.[1]) !== port) return false;
    }
    return (await info(port, 'replication')).get('role') === 'master';
  };
  const promotedAwayFrom = async (old: number, timeoutMs: number): Promise<number> => {
    let promoted = 0;
    await waitUntil(
      'a replica promoted by the sentinels',
      async () => {
        const port = await primaryPort().catch(() => old);
        if (port === old || !(await settledOn(port))) return false;
        promoted = port;
        return true;
      },
      timeoutMs,
      () => sentinels.map((s) => tailFile(s.log, 10)).join('\n'),
    );
    return promoted;
  };

  return {
    name,
    topology: {
      kind: 'sentinel',
      sentinels: sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
      name,
      tls: false,
      sentinelUsername: undefined,
      sentinelPassword: undefined,
    },
    nodes,
    primaryPort,
    replication: { hold: () => relay.hold(), release: () => relay.release(), cut: () => relay.cut() },
    async failover() {
      const old = await primaryPort();
      // A forced failover is refused while the last one's timeout runs: ask until it is taken.
      await waitUntil(
        'SENTINEL FAILOVER taken',
        async () => (await tryAsk(sentinels[0]?.port ?? 0, 'SENTINEL', 'FAILOVER', name)) === 'OK',
        15_000,
      );
      const promoted = await promotedAwayFrom(old, 30_000);
      // The sentinels reconfigure the old primary as a replica only at their next look at it (about 10 s): do it now.
      await ask(old, 'REPLICAOF', '127.0.0.1', promoted);
      // Whole again: the old primary follows the new one, caught up.
      await waitUntil(
        'the old primary following the new one',
        () => primaryWithReplicas(promoted, 1),
        30_000,
      );
    },
    async killPrimary() {
      const old = await primaryPort();
      const node = byPort.get(old);
      if (!node) throw new Error(`no local node on port ${old}`);
      await node.stop('SIGKILL');
      // The relay's address named that primary: it stops answering with it, so that the sentinels never take the
      // node behind it, restarted, for another replica (and no held stream outlives it).
      if (old === relay.port) await relay.close();
      await promotedAwayFrom(old, 30_000);
      return node;
    },
    async restart(node) {
      await node.start();
      const current = await primaryPort();
      // It starts as a primary of its own; the sentinels would make it a replica at their next look: now instead.
      await ask(node.port, 'REPLICAOF', '127.0.0.1', current);
      let state = '';
      await waitUntil(
        'the restarted node following the primary',
        async () => {
          state = `primary ${current}: ${[...(await info(current, 'replication'))].join(' ')}`;
          return primaryWithReplicas(current, 1);
        },
        30_000,
        () => state,
      );
    },
    stop,
  };
}

export interface LocalRedisCluster {
  readonly topology: Extract<RedisTopology, { kind: 'cluster' }>;
  readonly nodes: readonly LocalRedis[];
  /** CLUSTER KEYSLOT, as the server computes it. */
  keySlot(key: string): Promise<number>;
  /** The ports of the primary serving `slot` and of its replicas. */
  shardOf(slot: number): Promise<{ primary: number; replicas: number[] }>;
  /** CLUSTER FAILOVER on the replica of the primary serving `slot`; resolves once the replica serves it. */
  failover(slot: number): Promise<void>;
  /** SIGKILLs the primary serving `slot` and waits until its replica took over; the killed node stays down. */
  killPrimary(slot: number): Promise<LocalRedis>;
  /** Starts a killed node again (it rejoins as a replica) and waits until it is caught up. */
  restart(node: LocalRedis): Promise<void>;
  stop(): Promise<void>;
}

export async function startLocalRedisCluster(opts: { dir: string }): Promise<LocalRedisCluster> {
  assertRedisBinary();
  const nodes: LocalRedis[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.stop('SIGKILL')));
  };
  try {
    for (let i = 0; i < 6; i++) {
      nodes.push(
        await startLocalRedis({
          dir: join(opts.dir, `node-${i}`),
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '1000',
            // The bus port would be the port + 10000 (possibly taken, or past 65535): one of its own instead.
            '--cluster-port',
            String(await freePort()),
          ],
        }),
      );
    }
    await run(
      process.env['REDIS_CLI_BIN'] ?? 'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { timeout: 60_000 },
    );
    await waitUntil(
      'the cluster serving every slot, each primary with its replica',
      async () => {
        for (const node of nodes) {
          if (!(await askText(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
          // Every node knows a replica for every slot range (what a failover and the client's slot map need).
          const ranges = (await tryAsk(node.port, 'CLUSTER', 'SLOTS')) as unknown[][] | undefined;
          if (!ranges || ranges.length !== 3 || ranges.some((range) => range.length < 4)) return false;
        }
        const primaries = await primariesOf(nodes[0]?.port ?? 0);
        if (primaries.length !== 3) return false;
        for (const port of primaries) if (!(await primaryWithReplicas(port, 1))) return false;
        return true;
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = new Map(nodes.map((node) => [node.port, node]));
  const anyLive = async (): Promise<number> => {
    for (const node of nodes) if (await canConnect(node.port)) return node.port;
    throw new Error('no cluster node answers');
  };
  const shardOf = async (slot: number): Promise<{ primary: number; replicas: number[] }> => {
    const ranges = (await ask(await anyLive(), 'CLUSTER', 'SLOTS')) as Array<
      [number, number, ...unknown[][]]
    >;
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no node serves slot ${slot}`);
    const [, , primary, ...replicas] = range;
    return { primary: Number(primary?.[1]), replicas: replicas.map((r) => Number(r[1])) };
  };
  const servedBy = async (slot: number, port: number): Promise<boolean> => {
    for (const node of nodes) {
      if (!(await canConnect(node.port))) continue;
      const ranges = (await tryAsk(node.port, 'CLUSTER', 'SLOTS')) as
        Array<[number, number, ...unknown[][]]> | undefined;
      const range = ranges?.find(([from, to]) => slot >= from && slot <= to);
      if (Number(range?.[2]?.[1]) !== port) return false;
      if (!(await askText(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
    }
    return true;
  };

  return {
    topology: {
      kind: 'cluster',
      // Seed nodes: some of them are enough, the client finds the others.
      nodes: nodes.slice(0, 3).map((node) => ({ host: '127.0.0.1', port: node.port })),
      tls: false,
    },
    nodes,
    keySlot: async (key) => Number(await ask(await anyLive(), 'CLUSTER', 'KEYSLOT', key)),
    shardOf,
    async failover(slot) {
      const { replicas } = await shardOf(slot);
      const replica = replicas[0];
      if (replica === undefined) throw new Error(`slot ${slot} has no replica to fail over to`);
      await ask(replica, 'CLUSTER', 'FAILOVER');
      await waitUntil(
        `the replica on port ${replica} serving slot ${slot}`,
        () => servedBy(slot, replica),
        30_000,
      );
      await waitUntil('the old primary following it', () => primaryWithReplicas(replica, 1), 30_000);
    },
    async killPrimary(slot) {
      const { primary, replicas } = await shardOf(slot);
      const node = byPort.get(primary);
      const replica = replicas[0];
      if (!node || replica === undefined) throw new Error(`slot ${slot}: no local primary with a replica`);
      await node.stop('SIGKILL');
      await waitUntil(
        `the replica on port ${replica} taking slot ${slot} over`,
        () => servedBy(slot, replica),
        30_000,
      );
      return node;
    },
    async restart(node) {
      await node.start();
      await waitUntil(
        'the restarted node following a primary, caught up',
        async () => {
          const fields = await info(node.port, 'replication');
          const primary = Number(fields.get('master_port'));
          return fields.get('master_link_status') === 'up' && (await primaryWithReplicas(primary, 1));
        },
        30_000,
      );
    },
    stop,
  };
}

/** The ports of the cluster's primaries, as `port` sees them (CLUSTER NODES: id, address, flags, ...). */
async function primariesOf(port: number): Promise<number[]> {
  const text = await askText(port, 'CLUSTER', 'NODES');
  return text
    .split('\n')
    .map((line) => line.split(' '))
    .filter(
      ([, , flags]) => flags !== undefined && flags.split(',').includes('master') && !flags.includes('fail'),
    )
    .map(([, address]) => Number(address?.split('@')[0]?.split(':').at(-1)));
}
