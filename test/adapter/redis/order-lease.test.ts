import { describe, expect, it } from 'vitest';
import { LeaseKeeper, type LeaseLossReason } from '../../../src/redis/lease-keeper.ts';
import { OrderLease } from '../../../src/redis/order-lease.ts';
import { replicaAcks } from '../../../src/redis/replica-acks.ts';
import { eventually, useOwnRedis } from './redis-fixture.ts';
import { describeOrderLease } from './suites/order-lease.suite.ts';
import { monotonicNow } from '../../../src/redis/monotonic-clock.ts';

const redis = useOwnRedis();
describeOrderLease(redis);

// A Redis without replicas stands for one whose replicas are gone or behind: WAIT answers 0.
describe('OrderLease with replica acknowledgements, on a Redis whose replicas do not answer', () => {
  it('does not trust a grant no replica acknowledged: it is refused (retryable) and given back', async () => {
    const client = await redis.client();
    const acks = replicaAcks(client, { replicas: 1, timeoutMs: 50 });
    const lease = new OrderLease(client, acks ? { replicaAcks: acks } : {});
    const error: unknown = await lease.acquire('order-1', 'replica-a', 10_000).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'redis_unavailable', retryable: true });
    expect((error as Error).message).toBe(
      'lease grant of order order-1 answered by the primary but acknowledged by 0 of 1 replicas within 50 ms ' +
        '(REDIS_LEASE_MIN_REPLICAS): not trusted, a failover could lose it',
    );
    // Given back: the next holder does not wait for a lease nobody drives, and its fence is above the refused one.
    expect(await lease.holder('order-1')).toBeNull();
    const plain = new OrderLease(client);
    expect((await plain.acquire('order-1', 'replica-b', 10_000))?.fence).toBe(2);

    await expect(
      lease.acquireMany(
        [
          { orderId: 'order-2', minFence: 0 },
          { orderId: 'order-3', minFence: 0 },
        ],
        'replica-a',
        10_000,
      ),
    ).rejects.toMatchObject({ code: 'redis_unavailable' });
    expect(await lease.holder('order-2')).toBeNull();
    expect(await lease.holder('order-3')).toBeNull();
  });

  it('does not extend a lease by a renewal no replica acknowledged: it is lost at its local deadline', async () => {
    const client = await redis.client();
    const granted = await new OrderLease(client).acquire('order-1', 'replica-a', 600);
    if (!granted) throw new Error('expected a grant');
    const acks = replicaAcks(client, { replicas: 1, timeoutMs: 50 });
    const lease = new OrderLease(client, acks ? { replicaAcks: acks } : {});
    await expect(lease.renew(granted)).rejects.toMatchObject({ code: 'redis_unavailable' });
    const lost: LeaseLossReason[] = [];
    let lostAt = Number.NaN;
    const keeper = new LeaseKeeper(lease, {
      onLost: (_orderId, reason) => {
        lost.push(reason);
        lostAt = monotonicNow();
      },
    });
    keeper.keep(granted);
    await eventually('the lease lost', () => lost.length > 0, 2_000);
    // The primary renewed it every time, but nothing a failover would keep: trusted only until the grant's deadline.
    // Timed when the keeper gave it up, not when the poll above saw that (a loaded machine polls late).
    expect(lost).toEqual(['unreachable']);
    expect(lostAt - granted.acquiredAt).toBeLessThan(600);
  });
});
