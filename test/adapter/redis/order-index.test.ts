import { describe, expect, it } from 'vitest';
import { OrderIndex } from '../../../src/redis/order-index.ts';
import { reconnected, useOwnRedis } from './redis-fixture.ts';

const redis = useOwnRedis();

describe('OrderIndex', () => {
  it('routes a unique reference to the order another replica indexed', async () => {
    const prefix = redis.prefix();
    const writer = new OrderIndex(await redis.client({ keyPrefix: prefix }));
    const reader = new OrderIndex(await redis.client({ keyPrefix: prefix }));
    await writer.put('REF123', 'order-1');
    await writer.put('REF456', 'order-2');
    expect(await reader.get('REF123')).toBe('order-1');
    expect(await reader.get('REF456')).toBe('order-2');
    expect(await reader.get('REF-unknown')).toBeNull();
  });

  it('lets the latest put win', async () => {
    const index = new OrderIndex(await redis.client());
    await index.put('REF123', 'order-1');
    await index.put('REF123', 'order-1b');
    expect(await index.get('REF123')).toBe('order-1b');
  });

  it('gives entries a ttl so the index does not grow forever', async () => {
    const client = await redis.client();
    await new OrderIndex(client, { ttlSeconds: 3_600 }).put('REF123', 'order-1');
    const ttl = await client.ttl('order-index:REF123');
    expect(ttl).toBeGreaterThan(3_500);
    expect(ttl).toBeLessThanOrEqual(3_600);
  });

  it('is rebuilt by re-putting after Redis restarted empty, and fails with a retryable error while it is down', async () => {
    const client = await redis.client();
    const index = new OrderIndex(client);
    await index.put('REF123', 'order-1');
    await redis.server().stop();
    await expect(index.get('REF123')).rejects.toMatchObject({ code: 'redis_unavailable', retryable: true });
    await expect(index.put('REF123', 'order-1')).rejects.toMatchObject({
      code: 'redis_unavailable',
      retryable: true,
    });

    await redis.server().start();
    await reconnected(client);
    expect(await index.get('REF123')).toBeNull();
    await index.put('REF123', 'order-1');
    expect(await index.get('REF123')).toBe('order-1');
  });
});
