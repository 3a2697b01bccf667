import { describe, expect, it } from 'vitest';
import { OrderHomes } from '../../../src/redis/order-homes.ts';
import { useOwnRedis } from './redis-fixture.ts';

const redis = useOwnRedis();

describe('OrderHomes', () => {
  it("keeps an order's first partition for every replica, with a ttl", async () => {
    const prefix = redis.prefix();
    const client = await redis.client({ keyPrefix: prefix });
    const one = new OrderHomes(client, { ttlMs: 3_600_000 });
    const other = new OrderHomes(await redis.client({ keyPrefix: prefix }), { ttlMs: 3_600_000 });
    expect(await one.claim('order-1', 2)).toEqual({ partition: 2, retired: false });
    expect(await other.claim('order-1', 5)).toEqual({ partition: 2, retired: false });
    expect(await other.claim('order-1', 2)).toEqual({ partition: 2, retired: false });
    expect(await other.claim('order-2', 5)).toEqual({ partition: 5, retired: false });
    const ttl = await client.ttl('order-home:order-1');
    expect(ttl).toBeGreaterThan(3_500);
    expect(ttl).toBeLessThanOrEqual(3_600);
  });

  it('keeps a retired home retired, for the ttl from its retirement, for every replica', async () => {
    const prefix = redis.prefix();
    const client = await redis.client({ keyPrefix: prefix });
    const homes = new OrderHomes(client, { ttlMs: 3_600_000 });
    await homes.claim('order-1', 2);
    await client.expire('order-home:order-1', 10);
    await homes.retire('order-1', 2);
    const other = new OrderHomes(await redis.client({ keyPrefix: prefix }), { ttlMs: 3_600_000 });
    expect(await other.claim('order-1', 2)).toEqual({ partition: 2, retired: true });
    expect(await other.claim('order-1', 4)).toEqual({ partition: 2, retired: true });
    expect(await client.ttl('order-home:order-1')).toBeGreaterThan(3_500);
    // A home it never recorded (Redis lost it) is retired all the same.
    await homes.retire('order-2', 1);
    expect(await homes.claim('order-2', 1)).toEqual({ partition: 1, retired: true });
  });

  it('takes an unreadable home for this partition, not retired', async () => {
    const prefix = redis.prefix();
    const client = await redis.client({ keyPrefix: prefix });
    const homes = new OrderHomes(client, { ttlMs: 3_600_000 });
    for (const value of ['retired:', 'retired:x', '-1', 'retired:1:2', '3.5']) {
      await client.set('order-home:order-1', value);
      expect(await homes.claim('order-1', 4), value).toEqual({ partition: 4, retired: false });
    }
  });

  it('fails with a retryable error while Redis is down', async () => {
    const homes = new OrderHomes(await redis.client(), { ttlMs: 60_000 });
    await redis.server().stop();
    await expect(homes.claim('order-1', 0)).rejects.toMatchObject({
      code: 'redis_unavailable',
      retryable: true,
    });
    await expect(homes.retire('order-1', 0)).rejects.toMatchObject({
      code: 'redis_unavailable',
      retryable: true,
    });
  });
});
