// Builds the ioredis client the worker uses for coordination. Redis here is a fast, disposable coordinator
// (Kafka is the record), so calls fail fast while it is down instead of queueing: every caller has a
// documented answer to "Redis is unreachable" (lease: assume lost; cooldown: refuse and ask again; dedupe: first seen).
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisSecurity } from '../config.ts';
import { WorkerError } from '../errors.ts';
import { redisErrorCodes, toRedisWorkerError } from './redis-errors.ts';
import type { RedisPort, RedisScriptCommands } from './redis-port.ts';
import { defineRedisScripts } from './scripts.ts';

export type RedisClient = Redis & RedisScriptCommands;

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
  if (security?.tls) {
    const tls = Object.fromEntries(Object.entries(security.tls).filter(([, v]) => v !== undefined));
    options.tls = { ...tls, rejectUnauthorized: true };
  }
  if (security?.username !== undefined) options.username = security.username;
  if (security?.password !== undefined) options.password = security.password;
  return options;
}

export function createRedis(url: string, opts: CreateRedisOptions): RedisClient {
  const maxDelay = opts.maxReconnectDelayMs ?? 2000;
  const redis = new Redis(url, {
    ...redisSecurityOptions(opts.security),
    keyPrefix: opts.keyPrefix ?? '',
    lazyConnect: false,
    // Fail fast while disconnected: no offline queue, and commands caught in flight by a disconnect are
    // rejected rather than replayed later (a replayed acquire would take a lease nobody knows it holds).
    enableOfflineQueue: false,
    // Commands issued in the same tick leave in one write (a lease renewal, a budget decision and a claim per order
    // each cost a socket write otherwise: a fifth of the worker's CPU at a few thousand open orders).
    enableAutoPipelining: true,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    commandTimeout: opts.commandTimeoutMs ?? 1000,
    connectTimeout: opts.connectTimeoutMs ?? 2000,
    // Exponential backoff with jitter, so replicas do not reconnect in lockstep after a Redis restart.
    retryStrategy: (attempt) =>
      Math.min(maxDelay, 50 * 2 ** Math.min(attempt, 10)) * (0.5 + Math.random() / 2),
    // After a failover the old primary answers READONLY: reconnect to find the new one.
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  });
  redis.on('error', (error: unknown) => opts.onError(toRedisWorkerError(error, 'redis connection')));
  return defineRedisScripts(redis);
}

/** Resolves once the client is ready (connected, handshake done); rejects with redis_unavailable on timeout. */
export function whenRedisReady(redis: Redis, timeoutMs: number): Promise<void> {
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
export async function closeRedis(redis: Redis, timeoutMs = 2000): Promise<void> {
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
