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

describe('OrderIndex with a route cache', () => {
  /** An index without a cache that writes, and one with a cache of `entries` routes that reads, counting its GETs. */
  async function cachedPair(
    entries: number,
  ): Promise<{ writer: OrderIndex; reader: OrderIndex; gets: () => number }> {
    const prefix = redis.prefix();
    const writer = new OrderIndex(await redis.client({ keyPrefix: prefix }));
    let gets = 0;
    const counted = new Proxy(await redis.client({ keyPrefix: prefix }), {
      get(target, name, receiver) {
        if (name === 'get') gets++;
        return Reflect.get(target, name, receiver) as unknown;
      },
    });
    return { writer, reader: new OrderIndex(counted, { cacheEntries: entries }), gets: () => gets };
  }

  it('routes an order found once without reading Redis again, until forgotten or put anew', async () => {
    const { writer, reader, gets } = await cachedPair(2);
    await writer.put('REF-A', 'order-a', 3);
    await writer.put('REF-B', 'order-b');
    expect(await reader.locate('REF-A')).toEqual({ orderId: 'order-a', partition: 3 });
    expect(await reader.locate('REF-A')).toEqual({ orderId: 'order-a', partition: 3 });
    expect(gets()).toBe(1);
    // Neither an unknown reference nor an entry without its partition is kept: it may be put (with one) later.
    expect(await reader.locate('REF-unknown')).toBeNull();
    expect(await reader.locate('REF-unknown')).toBeNull();
    expect(await reader.locate('REF-B')).toEqual({ orderId: 'order-b' });
    expect(await reader.locate('REF-B')).toEqual({ orderId: 'order-b' });
    expect(gets()).toBe(5);
    // What the caller does with an answer does not change what is kept.
    const answer = await reader.locate('REF-A');
    if (answer) answer.partition = 9;
    expect(await reader.locate('REF-A')).toEqual({ orderId: 'order-a', partition: 3 });
    expect(gets()).toBe(5);
    // Put anew through this index: read again.
    await reader.put('REF-A', 'order-a', 3);
    expect(await reader.locate('REF-A')).toEqual({ orderId: 'order-a', partition: 3 });
    expect(gets()).toBe(6);
    // Forgotten (the order left the state topic): read again.
    await reader.forget('REF-A');
    expect(await reader.locate('REF-A')).toBeNull();
    expect(gets()).toBe(7);
  });

  it('keeps at most its number of routes, forgetting the oldest first', async () => {
    const { writer, reader, gets } = await cachedPair(2);
    for (const n of [1, 2, 3]) await writer.put(`REF-${n}`, `order-${n}`, n);
    for (const n of [1, 2, 3]) await reader.locate(`REF-${n}`);
    expect(gets()).toBe(3);
    await reader.locate('REF-3');
    await reader.locate('REF-2');
    expect(gets()).toBe(3);
    expect(await reader.locate('REF-1')).toEqual({ orderId: 'order-1', partition: 1 });
    expect(gets()).toBe(4);
  });

  it('refuses a negative size', () => {
    expect(() => new OrderIndex({} as never, { cacheEntries: -1 })).toThrow(/cacheEntries/);
  });
});
