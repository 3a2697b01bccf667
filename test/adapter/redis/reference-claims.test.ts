import { describe, expect, it } from 'vitest';
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
});
