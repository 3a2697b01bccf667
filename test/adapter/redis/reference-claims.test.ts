import { describe, expect, it } from 'vitest';
import { RedisCreatesInFlight } from '../../../src/redis/creates-in-flight.ts';
import { RedisReferenceClaims } from '../../../src/redis/reference-claims.ts';
import { useOwnRedis } from './redis-fixture.ts';

const redis = useOwnRedis();

describe('RedisReferenceClaims', () => {
  it('gives an exchange order to the first order that claims it, across replicas, and keeps it theirs', async () => {
    const prefix = redis.prefix();
    const a = new RedisReferenceClaims(await redis.client({ keyPrefix: prefix }));
    const b = new RedisReferenceClaims(await redis.client({ keyPrefix: prefix }));
    const [first, second] = await Promise.all([a.claim('REF1', 'order-a'), b.claim('REF1', 'order-b')]);
    expect([first, second].filter(Boolean)).toHaveLength(1);
    const winner = first ? 'order-a' : 'order-b';
    expect(await b.claim('REF1', winner)).toBe(true);
    expect(await a.claim('REF1', winner === 'order-a' ? 'order-b' : 'order-a')).toBe(false);
    expect(await a.claim('REF2', 'order-b')).toBe(true);
  });

  it('re-asserts a claim it took itself for the same order without asking Redis again, once', async () => {
    let calls = 0;
    const port = await redis.client({ keyPrefix: redis.prefix() });
    const counting = {
      referenceClaim: (...args: Parameters<typeof port.referenceClaim>) => {
        calls++;
        return port.referenceClaim(...args);
      },
      get: (key: string) => port.get(key),
    };
    const claims = new RedisReferenceClaims(counting);
    expect(await claims.claim('REF9', 'order-a')).toBe(true);
    expect(calls).toBe(1);
    // The route of the order just created: no second round trip.
    expect(await claims.reassert('REF9', 'order-a')).toBe(true);
    expect(calls).toBe(1);
    // Once only: a later reassertion (a partition read again) asks Redis, and so does one for another order.
    expect(await claims.reassert('REF9', 'order-a')).toBe(true);
    expect(calls).toBe(2);
    expect(await claims.reassert('REF9', 'order-b')).toBe(false);
    expect(calls).toBe(3);
    // A claim refused is never taken for one of ours.
    expect(await claims.claim('REF9', 'order-b')).toBe(false);
    expect(await claims.reassert('REF9', 'order-b')).toBe(false);
  });
});

describe('RedisReferenceClaims.owner', () => {
  it('names the order that claimed a reference, and takes nothing', async () => {
    const claims = new RedisReferenceClaims(await redis.client({ keyPrefix: redis.prefix() }));
    expect(await claims.owner('REF3')).toBeNull();
    expect(await claims.claim('REF3', 'order-a')).toBe(true);
    expect(await claims.owner('REF3')).toBe('order-a');
    expect(await claims.owner('REF4')).toBeNull();
    expect(await claims.claim('REF4', 'order-b')).toBe(true);
  });
});

describe('RedisCreatesInFlight', () => {
  it("tells a lookup how long another order's POST of the same siblings is still out, never its own", async () => {
    const prefix = redis.prefix();
    const a = new RedisCreatesInFlight(await redis.client({ keyPrefix: prefix }));
    const b = new RedisCreatesInFlight(await redis.client({ keyPrefix: prefix }));
    const siblings = 'cefi|BTC|ETH|0xabc';
    expect(await b.othersOut(siblings, 'order-b')).toBe(0);
    await a.open(siblings, 'order-a', 60_000);
    expect(await a.othersOut(siblings, 'order-a')).toBe(0);
    const remaining = await b.othersOut(siblings, 'order-b');
    expect(remaining).toBeGreaterThan(59_000);
    expect(remaining).toBeLessThanOrEqual(60_000);
    expect(await b.othersOut('cefi|BTC|ETH|0xother', 'order-b')).toBe(0);
    await a.close(siblings, 'order-a');
    expect(await b.othersOut(siblings, 'order-b')).toBe(0);
  });

  it('forgets a mark once its time is up (a replica that died mid-POST)', async () => {
    const marks = new RedisCreatesInFlight(await redis.client({ keyPrefix: redis.prefix() }));
    await marks.open('s', 'order-a', 50);
    expect(await marks.othersOut('s', 'order-b')).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await marks.othersOut('s', 'order-b')).toBe(0);
  });
});
