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
    expect(await one.claim('order-1', 2)).toBe(2);
    expect(await other.claim('order-1', 5)).toBe(2);
    expect(await other.claim('order-1', 2)).toBe(2);
    expect(await other.claim('order-2', 5)).toBe(5);
    const ttl = await client.ttl('order-home:order-1');
    expect(ttl).toBeGreaterThan(3_500);
    expect(ttl).toBeLessThanOrEqual(3_600);
  });

  it('fails with a retryable error while Redis is down', async () => {
    const homes = new OrderHomes(await redis.client(), { ttlMs: 60_000 });
    await redis.server().stop();
    await expect(homes.claim('order-1', 0)).rejects.toMatchObject({
      code: 'redis_unavailable',
      retryable: true,
    });
  });
});
