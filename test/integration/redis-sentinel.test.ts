// The worker's Redis on a Sentinel set (one primary, one replica, three sentinels: dev/services/redis-ha-local.ts): the
// lease, keeper, budget, cooldown and claim suites as on one Redis, then failovers. A failover may lose the primary's
// last writes, since replication is asynchronous; the tests hold the replica's replication stream to make it lose
// them for sure, and check what keeps every lease guarantee: a grant or renewal is trusted only once the replica has
// it (REDIS_LEASE_MIN_REPLICAS), and where a grant was lost anyway (acknowledgements off) the fence recorded in Kafka
// still puts the next holder above it, so the state topic keeps the next holder's record over the stale one's. Last,
// real workers drive orders to their end through a killed primary.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { KafkaClient } from '../../src/kafka/kafka-client.ts';
import { OrderStateStore, type OrderRecord } from '../../src/kafka/order-state-store.ts';
import { TransactionalWriter } from '../../src/kafka/transactional-writer.ts';
import { LeaseKeeper, type LeaseLossReason } from '../../src/redis/lease-keeper.ts';
import { OrderLease } from '../../src/redis/order-lease.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { eventually, useSentinelSet } from '../adapter/redis/redis-fixture.ts';
import { describeLeaseKeeper } from '../adapter/redis/suites/lease-keeper.suite.ts';
import { describeOrderLease } from '../adapter/redis/suites/order-lease.suite.ts';
import { describeQuoteCooldown } from '../adapter/redis/suites/quote-cooldown.suite.ts';
import { describeReferenceClaims } from '../adapter/redis/suites/reference-claims.suite.ts';
import { describeRedisRequestBudget } from '../adapter/redis/suites/request-budget.suite.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { assertExactlyOnce, completeAll } from '../support/order-outcomes.ts';
import { planOrders } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster } from '../support/worker-cluster.ts';

const redis = useSentinelSet();

describeOrderLease(redis);
describeLeaseKeeper(redis);
describeRedisRequestBudget(redis);
describeQuoteCooldown(redis);
describeReferenceClaims(redis);

const logger = createLogger({ level: 'silent' });

function cleanup(end: () => Promise<unknown>): void {
  onTestFinished(async () => {
    await end().catch(() => {});
  });
}

/** A state record of `orderId` as a lease holder writes it (the fields the ordering reads, the rest plausible). */
function stateRecord(orderId: string, fence: number, rev: number): OrderRecord {
  return {
    v: 1,
    order_id: orderId,
    partition: 0,
    fence,
    rev,
    seq: rev,
    updated_at: new Date().toISOString(),
    mode: 'cefi',
    create_hash: `v2:${'a'.repeat(32)}`,
    commands: [[`${orderId}-create`, `v2:${'a'.repeat(32)}`]],
    unique_reference: `ref-${orderId}`,
    terminal: false,
    machine: { resumeFrom: 'awaitingDeposit', context: {} },
  };
}

async function stateTopic(kafka: Kafka): Promise<string> {
  const topic = uniqueName('sentinel-state');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
    waitForLeaders: true,
  });
  cleanup(async () => {
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
  });
  return topic;
}

async function writerFor(kafka: Kafka): Promise<TransactionalWriter> {
  const writer = new TransactionalWriter({
    kafka: KafkaClient.wrap(kafka),
    transactionalId: uniqueName('tx'),
    consumerGroupId: uniqueName('group'),
    transactionTimeoutMs: 10_000,
    logger,
    onFatal: () => {},
  });
  await writer.connect();
  cleanup(() => writer.close());
  return writer;
}

describe('a Sentinel failover', () => {
  it('loses no lease anyone trusts when it loses the last writes; where a lost grant was trusted (acknowledgements off), the fence in Kafka refuses its holder', async () => {
    const set = redis.set();
    const prefix = redis.prefix();
    const clientA = await redis.client({ keyPrefix: prefix });
    const clientB = await redis.client({ keyPrefix: prefix });
    // A is the stale side (its last writes are lost), B the next holder; both as the worker makes them.
    const leaseA = new OrderLease(clientA, redis.leaseOptions(clientA));
    const leaseB = new OrderLease(clientB, redis.leaseOptions(clientB));
    const unacknowledged = new OrderLease(clientA);

    // X: granted and renewed with the replica's acknowledgement. A trusts it until its last acknowledged renewal
    // plus the ttl, less the keeper's margin (lease-keeper.ts).
    // Longer than the failover can take here (below), so that X is still there to be read on the new primary.
    const ttlMs = 40_000;
    const marginMs = ttlMs * 0.1;
    const x = await leaseA.acquire('order-x', 'replica-a', ttlMs);
    if (!x) throw new Error('expected a grant');
    await sleep(1_000);
    const acknowledgedAt = Date.now();
    expect(await leaseA.renew(x)).toBe(true);
    await sleep(1_000);

    // The replica stops receiving: whatever the primary answers from now on, a failover loses.
    set.replication.hold();
    // X renewed again: the primary extends it, the replica never hears of it, and A's trust is not extended.
    const unacknowledgedAt = Date.now();
    await expect(leaseA.renew(x)).rejects.toMatchObject({ code: 'redis_unavailable' });
    // Y: granted by the primary, acknowledged by no replica: never trusted, and given back.
    await expect(leaseA.acquire('order-y', 'replica-a', 60_000)).rejects.toMatchObject({
      code: 'redis_unavailable',
      message: expect.stringContaining('acknowledged by 0 of 1 replicas') as unknown,
    });
    // Z: a grant A makes without acknowledgements (REDIS_LEASE_MIN_REPLICAS=0): trusted, and recorded in Kafka (A's
    // state record carries fence 8, its minFence having been 7).
    const zA = await unacknowledged.acquire('order-z', 'replica-a', 60_000, 7);
    if (!zA) throw new Error('expected a grant');
    expect(zA.fence).toBe(8);

    const killed = await set.killPrimary();

    // The promoted replica holds X as its last acknowledged renewal left it: the unacknowledged one is lost, yet X
    // lasts there at least as long as A trusts it, so nobody can take it meanwhile.
    let seen: Awaited<ReturnType<OrderLease['holder']>> = null;
    let lastError = '';
    await eventually(
      'X read on the new primary',
      async () => {
        seen = await leaseB.holder('order-x').catch((error: unknown) => {
          lastError = String(error);
          return null;
        });
        return seen !== null;
      },
      // A failover takes a few seconds here (down-after 1 s, then an election); on a loaded 2-core CI machine a first
      // attempt can time out (failover-timeout 2 s) and the next waits twice that.
      30_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)} (last error: ${lastError || 'none: X is not there'})`);
    });
    const onNewPrimary = seen as Awaited<ReturnType<OrderLease['holder']>>;
    const expiresAt = Date.now() + (onNewPrimary?.remainingMs ?? 0);
    expect(onNewPrimary).toMatchObject({ owner: 'replica-a', fence: x.fence });
    expect(expiresAt).toBeGreaterThanOrEqual(acknowledgedAt + ttlMs - marginMs);
    expect(expiresAt).toBeLessThan(unacknowledgedAt + ttlMs - 500);
    expect(await leaseB.acquire('order-x', 'replica-b', ttlMs, x.fence)).toBeNull();
    // Y: nobody ever acted on it; the order is free.
    expect(await leaseB.holder('order-y')).toBeNull();
    // Z: the grant A trusted is gone, and the fence counter with it; A's writes under it are refused.
    expect(await leaseB.holder('order-z')).toBeNull();
    expect(await leaseB.renew(zA)).toBe(false);
    // By the counter alone the next grant is fence 1, below the fence A recorded (had A's record not been written
    // yet, the next holder could even get A's own fence: what the acknowledgements are for).
    const counterOnly = await new OrderLease(clientB).acquire('order-z', 'replica-b', 60_000);
    expect(counterOnly?.fence).toBe(1);
    if (counterOnly) await leaseB.release(counterOnly);

    // The killed primary comes back (empty) as the new primary's replica: acknowledgements are possible again.
    await set.restart(killed);
    // Passed the fence A recorded in Kafka (as the worker passes a state record's fence), B lands above A's grant.
    const zB = await leaseB.acquire('order-z', 'replica-b', 60_000, zA.fence);
    expect(zB?.fence).toBe(9);
    // The state topic orders records by (fence, rev): A's record written after B's, late, is not taken.
    const kafka = testKafka(services().kafkaBrokers);
    const topic = await stateTopic(kafka);
    const writerA = await writerFor(kafka);
    const writerB = await writerFor(kafka);
    const reader = new OrderStateStore({
      kafka: KafkaClient.wrap(kafka),
      topic,
      workerId: uniqueName('reader'),
      writer: await writerFor(kafka),
      logger,
      transactionTimeoutMs: 10_000,
    });
    await reader.start();
    cleanup(() => reader.stop());
    const write = (writer: TransactionalWriter, record: OrderRecord): Promise<unknown> =>
      writer.write([{ topic, key: record.order_id, partition: 0, value: JSON.stringify(record) }]);
    await write(writerA, stateRecord('order-z', zA.fence, 5));
    await write(writerB, stateRecord('order-z', zB?.fence ?? 0, 6));
    await write(writerA, stateRecord('order-z', zA.fence, 7));
    await reader.catchUp([0]);
    expect(reader.get('order-z')).toMatchObject({ fence: 9, rev: 6 });
  });

  it('keeps a lease its replica acknowledged through SENTINEL FAILOVER: its holder renews it, nobody else gets it, fences go on', async () => {
    const set = redis.set();
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
    const before = await set.primaryPort();
    await set.failover();
    expect(await set.primaryPort()).not.toBe(before);
    // Both clients follow the sentinels to the new primary; the lease is there, A's.
    await eventually(
      'the lease read on the new primary',
      async () => (await leaseB.holder('order-1').catch(() => null))?.owner === 'replica-a',
      30_000,
    );
    expect(await leaseB.acquire('order-1', 'replica-b', 15_000).catch(() => null)).toBeNull();
    await eventually('A renews on the new primary', () => leaseA.renew(grant).catch(() => false), 30_000);
    expect(keeper.isValid('order-1')).toBe(true);
    expect(lost).toEqual([]);
    expect(await keeper.release('order-1')).toBe(true);
    expect((await leaseB.acquire('order-1', 'replica-b', 15_000))?.fence).toBe(grant.fence + 1);
  });

  it('real workers drive every order to its end through a killed primary, each exactly once', async () => {
    const set = redis.set();
    const cluster = await startCluster({
      workers: 2,
      partitions: 4,
      env: {
        REDIS_URL: '',
        REDIS_SENTINELS: set.topology.sentinels.map(({ host, port }) => `${host}:${port}`).join(','),
        REDIS_SENTINEL_NAME: set.name,
      },
      sandbox: (config) => ({
        ...config,
        quotes: { ttlSeconds: 300, actionableDelayMs: 1_500 },
        limits: { sameChainFixedRateQuotesPerMinute: 10_000, crossChainFixedRateQuotesPerMinute: 10_000 },
      }),
    });
    cleanup(() => cluster.stop());
    const orders = planOrders(8, { variant: 7, orderId: (i) => uniqueName(`s${i}`) });
    for (const order of orders.slice(0, 5)) await cluster.send(order.command);
    await cluster.collector.waitFor(
      (events) => events.filter((e) => e.type === 'order.created').length >= 2,
      'some orders created',
      90_000,
    );
    // In the middle of the run: the primary dies, the sentinels promote its replica, and it comes back as a replica.
    const killed = await set.killPrimary();
    for (const order of orders.slice(5)) await cluster.send(order.command);
    await set.restart(killed);
    await completeAll(cluster, orders, 150_000);
    assertExactlyOnce(cluster, orders);
    expect(cluster.sandbox.orders.list()).toHaveLength(orders.length);
    for (const worker of cluster.workers) expect(worker.log()).not.toContain('"level":"fatal"');
  });
});
