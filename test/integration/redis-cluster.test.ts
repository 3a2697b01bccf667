// The worker's Redis on a Cluster (three primaries with a replica each: dev/services/redis-ha-local.ts): the lease,
// keeper, budget, cooldown and claim suites as on one Redis, the slots as the server computes them, a restore's batch
// of leases across the primaries, and failovers: the manual one (CLUSTER FAILOVER on a replica) and a killed primary.
import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { listingKeys } from '../../src/redis/listing-share.ts';
import { LeaseKeeper, type LeaseLossReason } from '../../src/redis/lease-keeper.ts';
import { fenceKey, leaseKey, OrderLease } from '../../src/redis/order-lease.ts';
import { quoteCooldownKey } from '../../src/redis/quote-cooldown.ts';
import { referenceClaimKey } from '../../src/redis/reference-claims.ts';
import { eventually, useRedisCluster } from '../adapter/redis/redis-fixture.ts';
import { describeLeaseKeeper } from '../adapter/redis/suites/lease-keeper.suite.ts';
import { describeOrderLease } from '../adapter/redis/suites/order-lease.suite.ts';
import { describeQuoteCooldown } from '../adapter/redis/suites/quote-cooldown.suite.ts';
import { describeReferenceClaims } from '../adapter/redis/suites/reference-claims.suite.ts';
import { describeRedisRequestBudget } from '../adapter/redis/suites/request-budget.suite.ts';

const redis = useRedisCluster();

describeOrderLease(redis);
describeLeaseKeeper(redis);
describeRedisRequestBudget(redis);
describeQuoteCooldown(redis);
describeReferenceClaims(redis);

describe('a Redis Cluster', () => {
  it('routes each key to the slot the server gives it, and keeps each call of several keys in one', async () => {
    const cluster = redis.cluster();
    const prefix = 'eow:exchange-order-worker:';
    const calls = [
      [leaseKey('order-1'), fenceKey('order-1')],
      ['exchange:budget:{a1b2c3d4e5f6}:tat', 'exchange:budget:{a1b2c3d4e5f6}:penalty'],
      [listingKeys('cefi').walking, listingKeys('cefi').latest, listingKeys('cefi').rows('walk-1')],
      [quoteCooldownKey('defi', 'ETHBTC', '1.5')],
      [referenceClaimKey('REF1')],
    ];
    for (const keys of calls) {
      const served = await Promise.all(keys.map((key) => cluster.keySlot(`${prefix}${key}`)));
      expect(served, keys.join(' ')).toEqual(keys.map((key) => calculateSlot(`${prefix}${key}`)));
      expect(new Set(served).size, keys.join(' ')).toBe(1);
    }
    // Where the client's slot function and the server part: an empty hash tag, which a consumer group with braces
    // would put in every key's prefix (the configuration refuses braces with a Cluster).
    const braced = 'eow:{}:lease:{order-1}';
    expect(await cluster.keySlot(braced)).not.toBe(calculateSlot(braced));
  });

  it("spreads a restore's batch of leases over every primary, each script run on one slot", async () => {
    const cluster = redis.cluster();
    const prefix = redis.prefix();
    const client = await redis.client({ keyPrefix: prefix });
    const lease = new OrderLease(client, redis.leaseOptions(client));
    const orders = Array.from({ length: 300 }, (_, i) => ({ orderId: `restore-${i}`, minFence: i }));
    const grants = await lease.acquireMany(orders, 'replica-a', 30_000);
    expect(grants.map((grant) => grant?.fence)).toEqual(orders.map(({ minFence }) => minFence + 1));
    const primaries = new Set(
      await Promise.all(
        orders.map(
          async ({ orderId }) =>
            (await cluster.shardOf(calculateSlot(`${prefix}${leaseKey(orderId)}`))).primary,
        ),
      ),
    );
    expect(primaries.size).toBe(3);
    // Held as single grants are: another owner is refused each of them.
    const other = await redis.client({ keyPrefix: prefix });
    const refused = await new OrderLease(other, redis.leaseOptions(other)).acquireMany(
      orders,
      'replica-b',
      30_000,
    );
    expect(refused.every((grant) => grant === null)).toBe(true);
  });

  it('keeps a lease its replica acknowledged through CLUSTER FAILOVER: its holder renews it, nobody else gets it', async () => {
    const cluster = redis.cluster();
    const prefix = redis.prefix();
    const clientA = await redis.client({ keyPrefix: prefix });
    const clientB = await redis.client({ keyPrefix: prefix });
    const leaseA = new OrderLease(clientA, redis.leaseOptions(clientA));
    const leaseB = new OrderLease(clientB, redis.leaseOptions(clientB));
    const grant = await leaseA.acquire('order-1', 'replica-a', 15_000);
    if (!grant) throw new Error('expected a grant');
    const lost: LeaseLossReason[] = [];
    const keeper = new LeaseKeeper(leaseA, { onLost: (_orderId, reason) => lost.push(reason) });
    keeper.keep(grant);
    const slot = calculateSlot(`${prefix}${leaseKey('order-1')}`);
    const before = await cluster.shardOf(slot);
    await cluster.failover(slot);
    expect((await cluster.shardOf(slot)).primary).toBe(before.replicas[0]);
    await eventually(
      'the lease read on the new primary',
      async () => (await leaseB.holder('order-1').catch(() => null))?.owner === 'replica-a',
      15_000,
    );
    expect(await leaseB.acquire('order-1', 'replica-b', 15_000).catch(() => null)).toBeNull();
    await eventually('A renews on the new primary', () => leaseA.renew(grant).catch(() => false), 15_000);
    expect(keeper.isValid('order-1')).toBe(true);
    expect(lost).toEqual([]);
    expect(await keeper.release('order-1')).toBe(true);
    expect((await leaseB.acquire('order-1', 'replica-b', 15_000))?.fence).toBe(grant.fence + 1);
  });

  it('keeps every acknowledged lease when a primary dies: its replica takes the slots over with them', async () => {
    const cluster = redis.cluster();
    const prefix = redis.prefix();
    const clientA = await redis.client({ keyPrefix: prefix });
    const clientB = await redis.client({ keyPrefix: prefix });
    const leaseA = new OrderLease(clientA, redis.leaseOptions(clientA));
    const leaseB = new OrderLease(clientB, redis.leaseOptions(clientB));
    // Orders whose leases live on the primary about to die, granted (and acknowledged) just before it does.
    const slot = calculateSlot(`${prefix}${leaseKey('doomed-0')}`);
    const { primary } = await cluster.shardOf(slot);
    const onIt: string[] = [];
    for (let i = 0; onIt.length < 20; i++) {
      const orderId = `doomed-${i}`;
      if ((await cluster.shardOf(calculateSlot(`${prefix}${leaseKey(orderId)}`))).primary === primary)
        onIt.push(orderId);
    }
    const grants = await Promise.all(onIt.map((orderId) => leaseA.acquire(orderId, 'replica-a', 30_000)));
    const killed = await cluster.killPrimary(slot);
    await eventually(
      'the slots served again',
      async () => (await leaseB.holder(onIt[0] ?? '').catch(() => null)) !== null,
      20_000,
    );
    for (const [i, orderId] of onIt.entries()) {
      expect(await leaseB.holder(orderId), orderId).toMatchObject({
        owner: 'replica-a',
        fence: grants[i]?.fence,
      });
      expect(await leaseB.acquire(orderId, 'replica-b', 30_000).catch(() => null), orderId).toBeNull();
    }
    // The dead primary comes back as a replica of the one that replaced it.
    await cluster.restart(killed);
    const grant = grants[0];
    if (!grant) throw new Error('expected a grant');
    expect(await leaseA.renew(grant)).toBe(true);
  });
});
