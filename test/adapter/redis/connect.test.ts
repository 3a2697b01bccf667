import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../dev/services/process-util.ts';
import type { WorkerError } from '../../../src/errors.ts';
import { closeRedis, createRedis, whenRedisReady } from '../../../src/redis/connect.ts';
import { leaseKey, OrderLease } from '../../../src/redis/order-lease.ts';
import { OrderIndex } from '../../../src/redis/order-index.ts';
import { QuoteCooldown } from '../../../src/redis/quote-cooldown.ts';
import { toRedisWorkerError } from '../../../src/redis/redis-errors.ts';
import { WebhookDedupe } from '../../../src/redis/webhook-dedupe.ts';
import { eventually, reconnected, useOwnRedis } from './redis-fixture.ts';

const redis = useOwnRedis();

describe('createRedis', () => {
  it('prefixes every key, the KEYS of the Lua commands included', async () => {
    const prefix = redis.prefix();
    const client = await redis.client({ keyPrefix: prefix });
    const raw = await redis.client({ keyPrefix: '' });
    await new OrderLease(client).acquire('order-1', 'replica-a', 10_000);
    await new OrderIndex(client).put('REF123', 'order-1');
    expect(await raw.exists(`${prefix}${leaseKey('order-1')}`)).toBe(1);
    expect(await raw.exists(`${prefix}lease:{order-1}:fence`)).toBe(1);
    expect(await raw.get(`${prefix}order-index:REF123`)).toBe('order-1');
    expect(await raw.exists(leaseKey('order-1'))).toBe(0);
  });

  it('reconnects on its own after Redis restarts empty, with every Lua command working again', async () => {
    const client = await redis.client();
    const lease = new OrderLease(client);
    const cooldown = new QuoteCooldown(client);
    const dedupe = new WebhookDedupe(client);
    const index = new OrderIndex(client);
    expect(await lease.acquire('order-1', 'replica-a', 10_000)).not.toBeNull();

    await redis.server().restart();
    await reconnected(client);

    // The server lost its script cache with its data: ioredis reloads the scripts on NOSCRIPT.
    const grant = await lease.acquire('order-1', 'replica-b', 10_000, 1);
    expect(grant?.fence).toBe(2);
    if (!grant) return;
    expect(await lease.renew(grant)).toBe(true);
    expect(await lease.holder('order-1')).toMatchObject({ owner: 'replica-b', fence: 2 });
    expect(await lease.release(grant)).toBe(true);
    expect((await cooldown.tryAcquire('defi', 'ETHBTC', '1', 15_000)).granted).toBe(true);
    expect(await dedupe.firstSeen('REF123', 'PAID')).toBe(true);
    await index.put('REF123', 'order-1');
    expect(await index.get('REF123')).toBe('order-1');
  });

  it('fails commands fast while Redis is down instead of queueing them', async () => {
    const client = await redis.client();
    await redis.server().stop();
    const started = Date.now();
    await expect(new OrderIndex(client).get('REF123')).rejects.toMatchObject({
      code: 'redis_unavailable',
      retryable: true,
    });
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('times a command out when Redis stalls rather than hanging', async () => {
    const client = await redis.client({ commandTimeoutMs: 200 });
    const pid = redis.server().state.pid;
    process.kill(pid, 'SIGSTOP');
    try {
      const started = Date.now();
      await expect(new OrderIndex(client).get('REF123')).rejects.toMatchObject({
        code: 'redis_unavailable',
        retryable: true,
      });
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await reconnected(client);
  });

  it('reports connection failures through onError as WorkerErrors without credentials', async () => {
    const errors: WorkerError[] = [];
    const port = await freePort();
    const client = createRedis(`redis://worker:s3cret-pass@127.0.0.1:${port}`, {
      onError: (error) => errors.push(error),
      maxReconnectDelayMs: 100,
    });
    try {
      await eventually('connection errors reported', () => errors.length >= 2, 5_000);
      for (const error of errors) {
        expect(error).toMatchObject({ code: 'redis_unavailable', retryable: true });
        expect(error.message).not.toContain('s3cret');
      }
      await expect(whenRedisReady(client, 200)).rejects.toMatchObject({ code: 'redis_unavailable' });
    } finally {
      await closeRedis(client);
    }
  });

  it('translates a refusal by Redis into a non-retryable redis_command_failed', async () => {
    const client = await redis.client();
    await client.hset(leaseKey('order-1'), 'not', 'a string');
    const lease = new OrderLease(client);
    const error = await lease
      .renew({ orderId: 'order-1', owner: 'replica-a', fence: 1, ttlMs: 1_000, acquiredAt: 0 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'redis_command_failed', retryable: false });
    expect(toRedisWorkerError(new Error('connect ECONNREFUSED redis://u:pw@host:6379'))).toMatchObject({
      code: 'redis_unavailable',
    });
    expect(toRedisWorkerError(new Error('redis://u:pw@host:6379 unreachable')).message).not.toContain('pw');
  });

  it('closes cleanly whether Redis is up or down, and a closed client stays closed', async () => {
    const up = await redis.client();
    const down = await redis.client();
    await closeRedis(up);
    expect(up.status).toBe('end');

    await redis.server().stop();
    await eventually('client notices the server is gone', () => down.status === 'reconnecting', 5_000);
    await closeRedis(down);
    await redis.server().start();
    await sleep(600);
    expect(down.status).not.toBe('ready');
  });
});
