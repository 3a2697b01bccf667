// Builds the ioredis client the worker uses for coordination, for each topology: one endpoint (a URL), a Sentinel set
// (the primary the sentinels name, found again after a failover) or a Cluster (each key on the primary of its slot).
// Redis here is a fast, disposable coordinator (Kafka is the record), so calls fail fast while it is down instead of
// queueing: every caller has a documented answer to "Redis is unreachable" (lease: assume lost; cooldown: refuse and
// ask again; dedupe: first seen).
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisSecurity } from '../config/security.ts';
import type { RedisTopology } from '../config/redis-topology.ts';
import { WorkerError } from '../errors.ts';
import { splitBatchesBySlot } from './slot-batches.ts';
import { redisErrorCodes, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort, RedisScriptCommands } from './redis-port.ts';
import { defineRedisScripts } from './scripts.ts';

/** A client of one primary (a URL, or the primary a Sentinel set names) or of a Cluster, with our Lua commands. */
export type RedisClient = (Redis | Cluster) & RedisScriptCommands;

export interface CreateRedisOptions {
  /** Prepended to every key, including the KEYS of our Lua commands (e.g. "ow:prod:"). */
  keyPrefix?: string;
  /** Connection-level failures (emitted on every failed reconnect attempt): log them, rate-limited. */
  onError: (error: WorkerError) => void;
  /** A command without a reply after this long fails with redis_unavailable (default 1000 ms). */
  commandTimeoutMs?: number;
  /** TCP connect timeout per attempt (default 2000 ms). */
  connectTimeoutMs?: number;
  /** Upper bound of the reconnect backoff (default 2000 ms). */
  maxReconnectDelayMs?: number;
  /** TLS (for rediss:// URLs: CA, client certificate, server name) and the ACL user; from the configuration. */
  security?: RedisSecurity;
}

/** ioredis options for TLS and ACL authentication. TLS always verifies the server's certificate. */
export function redisSecurityOptions(security: RedisSecurity | undefined): Partial<RedisOptions> {
  const options: Partial<RedisOptions> = {};
  const tls = tlsOptions(security);
  if (tls) options.tls = tls;
  if (security?.username !== undefined) options.username = security.username;
  if (security?.password !== undefined) options.password = security.password;
  return options;
}

function tlsOptions(security: RedisSecurity | undefined): RedisOptions['tls'] {
  if (!security?.tls) return undefined;
  const tls = Object.fromEntries(Object.entries(security.tls).filter(([, v]) => v !== undefined));
  return { ...tls, rejectUnauthorized: true };
}

/** Exponential backoff with jitter, so replicas do not reconnect in lockstep after a Redis restart. */
function backoff(maxDelayMs: number): (attempt: number) => number {
  return (attempt) => Math.min(maxDelayMs, 50 * 2 ** Math.min(attempt, 10)) * (0.5 + Math.random() / 2);
}

/** What every connection to a Redis node gets, whatever the topology. */
function connectionOptions(opts: CreateRedisOptions) {
  return {
    ...redisSecurityOptions(opts.security),
    // Commands issued in the same tick leave in one write (a lease renewal, a budget decision and a claim per order
    // each cost a socket write otherwise: a fifth of the worker's CPU at a few thousand open orders).
    enableAutoPipelining: true,
    // Commands caught in flight by a disconnect are rejected rather than replayed later (a replayed acquire would
    // take a lease nobody knows it holds).
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs ?? 1000,
    connectTimeout: opts.connectTimeoutMs ?? 2000,
    // After a failover the old primary answers READONLY: reconnect to find the new one.
    reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
  } satisfies Partial<RedisOptions>;
}

/**
 * The client for `where`: a redis:// or rediss:// URL, or the topology of the configuration (`config.redis`).
 * Every topology answers the same port (RedisPort): on a Cluster each command and script goes to its key's slot,
 * and a batch of leases is split by slot first (slot-batches.ts).
 */
export function createRedis(where: string | RedisTopology, opts: CreateRedisOptions): RedisClient {
  const topology: RedisTopology = typeof where === 'string' ? { kind: 'standalone', url: where } : where;
  const maxDelay = opts.maxReconnectDelayMs ?? 2000;
  const keyPrefix = opts.keyPrefix ?? '';
  let client: Redis | Cluster;
  if (topology.kind === 'cluster') {
    const options: ClusterOptions = {
      keyPrefix,
      lazyConnect: false,
      // Fail fast while a slot's primary cannot be reached: no offline queue.
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      // ioredis groups a Cluster's auto-pipelines by the slot of a command's first argument, which for a script whose
      // number of keys comes with each call is that number, not a key: such a script is sent on its own instead.
      autoPipeliningIgnoredCommands: ['leaseAcquireMany'],
      // Every command (reads included) goes to the slot's primary: a replica may lag behind a lease.
      scaleReads: 'master',
      clusterRetryStrategy: backoff(maxDelay),
      // Moved slots and a primary being replaced are retried for about a second, within the command timeout.
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      maxRedirections: 10,
      slotsRefreshTimeout: opts.connectTimeoutMs ?? 2000,
      redisOptions: connectionOptions(opts),
      // TLS certificates name the hosts the cluster announces: connect to those names, not to resolved addresses.
      ...(topology.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    };
    client = new Cluster(
      topology.nodes.map(({ host, port }) => ({ host, port })),
      options,
    );
  } else {
    const common: RedisOptions = {
      ...connectionOptions(opts),
      keyPrefix,
      lazyConnect: false,
      // Fail fast while disconnected: no offline queue.
      enableOfflineQueue: false,
      retryStrategy: backoff(maxDelay),
    };
    if (topology.kind === 'standalone') {
      client = new Redis(topology.url, common);
    } else {
      const sentinelClient = new Redis({
        ...common,
        sentinels: topology.sentinels.map(({ host, port }) => ({ host, port })),
        name: topology.name,
        role: 'master',
        // Told by the sentinels as soon as they switch the primary, instead of finding out on the next error.
        failoverDetector: true,
        sentinelRetryStrategy: backoff(maxDelay),
        sentinelCommandTimeout: opts.commandTimeoutMs ?? 1000,
        ...(topology.sentinelUsername === undefined ? {} : { sentinelUsername: topology.sentinelUsername }),
        ...(topology.sentinelPassword === undefined ? {} : { sentinelPassword: topology.sentinelPassword }),
        ...(topology.tls
          ? { enableTLSForSentinelMode: true, sentinelTLS: tlsOptions(opts.security) ?? {} }
          : {}),
      });
      connectAgainAfterFailedConnects(sentinelClient, backoff(maxDelay));
      client = sentinelClient;
    }
  }
  client.on('error', (error: unknown) => opts.onError(toRedisWorkerError(error, 'redis connection')));
  const scripted = defineRedisScripts(client);
  return client instanceof Cluster ? splitBatchesBySlot(scripted, keyPrefix) : scripted;
}

/** How to stop connectAgainAfterFailedConnects for a client closeRedis closes. */
const stopConnectingAgain = new WeakMap<Redis | Cluster, () => void>();

/**
 * Connects a Sentinel client again when a connect attempt ended it, which ioredis does for good otherwise. Its
 * failover detector disconnects the client on "+switch-master"; when that message comes while a reconnect is asking
 * the sentinels for the primary (the primary was killed, and the client retries until the sentinels name another),
 * the attempt throws "Connection is closed." and the client stops at "end", every later command failing with that:
 * the worker would never reach the new primary. A connection that was closed (quit, or a retry strategy giving up)
 * passes "close" before "end" and stays ended; closeRedis stops this for a client it disconnects while connecting.
 */
function connectAgainAfterFailedConnects(client: Redis, delay: (attempt: number) => number): void {
  let connecting = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  client.on('connecting', () => {
    connecting = true;
  });
  client.on('close', () => {
    connecting = false;
  });
  client.on('ready', () => {
    attempt = 0;
  });
  client.on('end', () => {
    if (stopped || !connecting) return;
    connecting = false;
    timer = setTimeout(() => {
      timer = undefined;
      // Its errors reach the client's 'error' listener (onError); a failure ends it again, and it is retried again.
      if (!stopped && client.status === 'end') client.connect().catch(() => {});
    }, delay(++attempt));
  });
  stopConnectingAgain.set(client, () => {
    stopped = true;
    clearTimeout(timer);
  });
}

/** Resolves once the client is ready (connected, handshake done); rejects with redis_unavailable on timeout. */
export function whenRedisReady(redis: Redis | Cluster, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(
        new WorkerError(
          redisErrorCodes.unavailable,
          `redis not ready after ${timeoutMs} ms (status ${redis.status})`,
          { retryable: true },
        ),
      );
    }, timeoutMs);
    redis.once('ready', onReady);
  });
}

/**
 * Closes the client for good: a clean QUIT when connected, else a local disconnect that also cancels a pending
 * reconnect (ioredis then leaves the status at "reconnecting", but nothing reconnects any more).
 */
export async function closeRedis(redis: Redis | Cluster, timeoutMs = 2000): Promise<void> {
  stopConnectingAgain.get(redis)?.();
  if (redis.status === 'end') return;
  if (redis.status === 'reconnecting' || redis.status === 'wait') {
    redis.disconnect();
    return;
  }
  const ended = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    redis.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  if (redis.status === 'ready') {
    await redis.quit().catch(() => redis.disconnect());
  } else {
    redis.disconnect();
  }
  await ended;
}

// Compile-time proof that the client we build satisfies the narrow port.
const _portCheck: (client: RedisClient) => RedisPort = (client) => client;
