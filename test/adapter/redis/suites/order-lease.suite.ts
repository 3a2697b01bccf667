// The lease adapter's behaviour, the same on every topology (test/adapter/redis/redis-fixture.ts): one owner at a time,
// strictly increasing fences, minFence from Kafka, the batch acquire of a restore. The outage cases (Redis stopped or
// restarted empty) need the one server of a standalone Redis; a Sentinel set's and a Cluster's are their failovers.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { WorkerError } from '../../../../src/errors.ts';
import type { RedisClient } from '../../../../src/redis/connect.ts';
import { OrderLease, type OrderLeaseOptions } from '../../../../src/redis/order-lease.ts';
import { reconnected, type RedisFixture } from '../redis-fixture.ts';

export function describeOrderLease(redis: RedisFixture): void {
  const server = redis.server;
  /** A lease as the worker makes it on this topology (with replica acknowledgements where it has replicas). */
  const leaseOf = (client: RedisClient, opts: OrderLeaseOptions = {}): OrderLease =>
    new OrderLease(client, { ...redis.leaseOptions(client), ...opts });

  describe(`OrderLease (${redis.kind})`, () => {
    it('grants an order to one owner at a time', async () => {
      const lease = leaseOf(await redis.client());
      const a = await lease.acquire('order-1', 'replica-a', 10_000);
      expect(a).toMatchObject({ orderId: 'order-1', owner: 'replica-a', ttlMs: 10_000 });
      expect(a?.fence).toBeGreaterThan(0);
      expect(await lease.acquire('order-1', 'replica-b', 10_000)).toBeNull();
      expect(await lease.acquire('order-1', 'replica-a', 10_000)).toBeNull();
      expect(await lease.holder('order-1')).toMatchObject({ owner: 'replica-a', fence: a?.fence });
    });

    it('keeps orders independent of each other', async () => {
      const lease = leaseOf(await redis.client());
      expect(await lease.acquire('order-1', 'replica-a', 10_000)).not.toBeNull();
      expect(await lease.acquire('order-2', 'replica-b', 10_000)).not.toBeNull();
    });

    it('two replicas sharing a key prefix exclude each other', async () => {
      const prefix = redis.prefix();
      const replicaA = leaseOf(await redis.client({ keyPrefix: prefix }));
      const replicaB = leaseOf(await redis.client({ keyPrefix: prefix }));
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? replicaA : replicaB).acquire('order-x', `replica-${i}`, 10_000),
        ),
      );
      expect(results.filter((grant) => grant !== null)).toHaveLength(1);
    });

    it('renews and releases only for the holder, refusing a wrong token', async () => {
      const lease = leaseOf(await redis.client());
      const grant = await lease.acquire('order-1', 'replica-a', 2_000);
      if (!grant) throw new Error('expected a grant');

      expect(await lease.renew({ ...grant, owner: 'replica-b' })).toBe(false);
      expect(await lease.renew({ ...grant, fence: grant.fence + 1 })).toBe(false);
      expect(await lease.release({ ...grant, owner: 'replica-b' })).toBe(false);
      expect(await lease.release({ ...grant, fence: grant.fence - 1 })).toBe(false);
      expect(await lease.holder('order-1')).toMatchObject({ owner: 'replica-a' });

      expect(await lease.renew({ ...grant, ttlMs: 30_000 })).toBe(true);
      expect((await lease.holder('order-1'))?.remainingMs).toBeGreaterThan(20_000);

      expect(await lease.release(grant)).toBe(true);
      expect(await lease.holder('order-1')).toBeNull();
      expect(await lease.release(grant)).toBe(false);
      expect(await lease.renew(grant)).toBe(false);
    });

    it('lets another owner in with a higher fence once the lease expired, and refuses the old holder', async () => {
      const lease = leaseOf(await redis.client());
      const first = await lease.acquire('order-1', 'replica-a', 150);
      if (!first) throw new Error('expected a grant');
      await sleep(250);
      const second = await lease.acquire('order-1', 'replica-b', 10_000);
      expect(second?.fence).toBeGreaterThan(first.fence);
      expect(await lease.renew(first)).toBe(false);
      expect(await lease.release(first)).toBe(false);
      expect(await lease.holder('order-1')).toMatchObject({ owner: 'replica-b', fence: second?.fence });
    });

    it('hands out strictly increasing fences across acquire and release', async () => {
      const lease = leaseOf(await redis.client());
      const fences: number[] = [];
      for (let i = 0; i < 5; i++) {
        const grant = await lease.acquire('order-1', `replica-${i}`, 10_000);
        if (!grant) throw new Error('expected a grant');
        fences.push(grant.fence);
        await lease.release(grant);
      }
      expect(fences).toEqual([1, 2, 3, 4, 5]);
    });

    it('starts above minFence when the counter is behind what Kafka recorded', async () => {
      const lease = leaseOf(await redis.client());
      const grant = await lease.acquire('order-1', 'replica-a', 10_000, 41);
      expect(grant?.fence).toBe(42);
      if (grant) await lease.release(grant);
      expect((await lease.acquire('order-1', 'replica-a', 10_000, 3))?.fence).toBe(43);
    });

    it('handles fences beyond 2^50 without losing precision', async () => {
      const lease = leaseOf(await redis.client());
      const big = 2 ** 50 + 7;
      const grant = await lease.acquire('order-1', 'replica-a', 10_000, big);
      expect(grant?.fence).toBe(big + 1);
      if (!grant) throw new Error('expected a grant');
      expect(await lease.renew(grant)).toBe(true);
      expect(await lease.release(grant)).toBe(true);
      expect((await lease.acquire('order-1', 'replica-a', 10_000))?.fence).toBe(big + 2);
    });

    if (server) {
      it('keeps the fence monotonic after Redis restarts empty, given the last recorded fence as minFence', async () => {
        const client = await redis.client();
        const lease = leaseOf(client);
        for (let i = 0; i < 3; i++) {
          const grant = await lease.acquire('order-1', 'replica-a', 10_000);
          if (grant) await lease.release(grant);
        }
        const held = await lease.acquire('order-1', 'replica-a', 10_000);
        if (!held) throw new Error('expected a grant');
        const last = held.fence;
        expect(last).toBe(4);

        await server().restart();
        await reconnected(client);

        // The lease is gone with the data; the runtime passes the highest fence it recorded in Kafka.
        expect(await lease.holder('order-1')).toBeNull();
        expect(await lease.renew(held)).toBe(false);
        const after = await lease.acquire('order-1', 'replica-b', 10_000, last);
        expect(after?.fence).toBe(last + 1);
        if (!after) throw new Error('expected a grant');
        await lease.release(after);
        expect((await lease.acquire('order-1', 'replica-c', 10_000, last))?.fence).toBe(last + 2);
      });
    }

    if (server) {
      it('fails fast with a retryable redis_unavailable error while Redis is down, and works again once it is back', async () => {
        const client = await redis.client();
        const lease = leaseOf(client);
        await server().stop();
        const started = Date.now();
        const error: unknown = await lease.acquire('order-1', 'replica-a', 10_000).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(WorkerError);
        expect(error).toMatchObject({ code: 'redis_unavailable', retryable: true });
        expect(Date.now() - started).toBeLessThan(2_000);

        await server().start();
        await reconnected(client);
        expect(await lease.acquire('order-1', 'replica-a', 10_000)).not.toBeNull();
      });
    }

    it('rejects a non-positive ttl and a negative minFence as invalid arguments', async () => {
      const lease = leaseOf(await redis.client());
      await expect(lease.acquire('order-1', 'replica-a', 0)).rejects.toMatchObject({
        code: 'invalid_argument',
        retryable: false,
      });
      await expect(lease.acquire('order-1', 'replica-a', 1000, -1)).rejects.toMatchObject({
        code: 'invalid_argument',
      });
      await expect(lease.acquire('', 'replica-a', 1000)).rejects.toMatchObject({ code: 'invalid_argument' });
    });
    describe('acquireMany (a restore: many orders in one round trip)', () => {
      it('grants each free order as acquire would, refuses each held one, and answers in the order asked', async () => {
        const client = await redis.client({ keyPrefix: redis.prefix() });
        const lease = leaseOf(client);
        const held = await lease.acquire('order-2', 'replica-b', 10_000);
        const earlier = await lease.acquire('order-3', 'replica-a', 10_000);
        if (!held || !earlier) throw new Error('expected grants');
        await lease.release(earlier);

        const grants = await lease.acquireMany(
          [
            { orderId: 'order-1', minFence: 41 },
            { orderId: 'order-2', minFence: 0 },
            { orderId: 'order-3', minFence: 0 },
            { orderId: 'order-4', minFence: 2 ** 50 + 7 },
          ],
          'replica-a',
          10_000,
        );
        expect(grants.map((grant) => grant?.fence ?? null)).toEqual([
          42,
          null,
          earlier.fence + 1,
          2 ** 50 + 8,
        ]);
        expect(grants[0]).toMatchObject({ orderId: 'order-1', owner: 'replica-a', ttlMs: 10_000 });
        expect(grants[3]?.orderId).toBe('order-4');
        // Held as one acquire holds it: the holder, its ttl, renewable and releasable by its token only.
        expect(await lease.holder('order-2')).toMatchObject({ owner: 'replica-b', fence: held.fence });
        expect(await lease.holder('order-1')).toMatchObject({ owner: 'replica-a', fence: 42 });
        expect((await lease.holder('order-3'))?.remainingMs).toBeGreaterThan(9_000);
        expect(await lease.acquire('order-1', 'replica-b', 10_000)).toBeNull();
        const first = grants[0];
        if (!first) throw new Error('expected a grant');
        expect(await lease.renew(first)).toBe(true);
        expect(await lease.release(first)).toBe(true);
        // The counter went on from the batch's fence: the next grant is above it.
        expect((await lease.acquire('order-1', 'replica-b', 10_000))?.fence).toBe(43);
        // Nothing asked, nothing sent.
        expect(await lease.acquireMany([], 'replica-a', 10_000)).toEqual([]);
      });

      it('keeps the fence counters it touched for the retention, like acquire', async () => {
        const client = await redis.client();
        const lease = leaseOf(client, { fenceRetentionMs: 60_000 });
        await lease.acquireMany([{ orderId: 'order-1', minFence: 0 }], 'replica-a', 10_000);
        const ttl = await client.pttl('lease:{order-1}:fence');
        expect(ttl).toBeGreaterThan(50_000);
        expect(ttl).toBeLessThanOrEqual(60_000);
        const forever = leaseOf(client, { fenceRetentionMs: 0 });
        await forever.acquireMany([{ orderId: 'order-2', minFence: 0 }], 'replica-a', 10_000);
        expect(await client.pttl('lease:{order-2}:fence')).toBe(-1);
      });

      if (server) {
        it('fails as a whole with a retryable redis_unavailable error while Redis is down, and rejects bad arguments', async () => {
          const client = await redis.client();
          const lease = leaseOf(client);
          await expect(
            lease.acquireMany([{ orderId: 'order-1', minFence: -1 }], 'replica-a', 10_000),
          ).rejects.toMatchObject({ code: 'invalid_argument' });
          await expect(
            lease.acquireMany([{ orderId: '', minFence: 0 }], 'replica-a', 10_000),
          ).rejects.toMatchObject({
            code: 'invalid_argument',
          });
          await server().stop();
          const error: unknown = await lease
            .acquireMany([{ orderId: 'order-1', minFence: 0 }], 'replica-a', 10_000)
            .catch((e: unknown) => e);
          expect(error).toMatchObject({ code: 'redis_unavailable', retryable: true });
          await server().start();
          await reconnected(client);
          expect(
            (await lease.acquireMany([{ orderId: 'order-1', minFence: 0 }], 'replica-a', 10_000))[0]?.fence,
          ).toBe(1);
        });
      }
    });
  });
}
