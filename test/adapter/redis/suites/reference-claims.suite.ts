// Reference claims on every topology: one exchange order is never adopted by two orders.
import { describe, expect, it } from 'vitest';
import { RedisReferenceClaims } from '../../../../src/redis/reference-claims.ts';
import type { RedisFixture } from '../redis-fixture.ts';

export function describeReferenceClaims(redis: RedisFixture): void {
  describe(`RedisReferenceClaims (${redis.kind})`, () => {
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
}
