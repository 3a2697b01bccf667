// Failure tests with real processes: a worker SIGKILLed in the middle of driving orders, and Redis restarted
// empty under running workers. Every order must still finish, with exactly one exchange order each and an event
// history without gaps or repeats.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalRedis, type LocalRedis } from '../../dev/services/index.ts';
import { seqProblems, type PublishedEvent } from '../support/kafka-helpers.ts';
import { uniqueName } from '../support/services.ts';
import { planOrders, type PlannedOrder } from '../support/order-specs.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';

const cleanups = cleanupsAfterEach();

const fastQuotes = (config: Parameters<NonNullable<Parameters<typeof startCluster>[0]['sandbox']>>[0]) => ({
  ...config,
  quotes: { ttlSeconds: 300, actionableDelayMs: 1_500 },
  limits: { sameChainFixedRateQuotesPerMinute: 10_000, crossChainFixedRateQuotesPerMinute: 10_000 },
});

function planTestOrders(count: number, variant: number): PlannedOrder[] {
  return planOrders(count, { variant, orderId: (i) => uniqueName(`o${i}`) });
}

async function completeAll(cluster: Cluster, orders: PlannedOrder[], timeoutMs: number): Promise<void> {
  const advanced = new Set<string>();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const order of orders) {
      if (advanced.has(order.orderId)) continue;
      const created = cluster.collector.of(order.orderId).find((e) => e.type === 'order.created');
      if (!created) continue;
      cluster.sandbox.advanceOrder(String(created['unique_reference']), 'completed');
      advanced.add(order.orderId);
    }
    const done = orders.filter((o) =>
      cluster.collector.of(o.orderId).some((e) => e.type === 'order.completed'),
    );
    if (done.length === orders.length) return;
    if (Date.now() > deadline) {
      const missing = orders
        .filter((o) => !done.includes(o))
        .map(
          (o) =>
            `${o.orderId}: ${cluster.collector
              .of(o.orderId)
              .map((e) => e.type)
              .join(',')}`,
        );
      throw new Error(`${orders.length - done.length} orders not completed:\n${missing.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function assertExactlyOnce(cluster: Cluster, orders: PlannedOrder[]): void {
  const exchangeOrders = cluster.sandbox.orders.list();
  for (const order of orders) {
    const onExchange = exchangeOrders.filter(
      (o) => Number(o.order['deposit_amount']) === Number(order.amount),
    );
    expect(onExchange, `exchange orders for ${order.orderId}`).toHaveLength(1);
    const events: PublishedEvent[] = cluster.collector.of(order.orderId);
    expect(seqProblems(events), `seq of ${order.orderId}`).toEqual([]);
    expect(new Set(events.map((e) => e.event_id)).size, `distinct event ids of ${order.orderId}`).toBe(
      events.length,
    );
    expect(events.filter((e) => e.type === 'order.created')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'order.completed')).toHaveLength(1);
    expect(events.at(-1)?.type).toBe('order.completed');
  }
}

describe('worker failover', () => {
  it('three workers on 12 partitions: one SIGKILLed mid-flight, every order still completes exactly once', async () => {
    const cluster = await startCluster({ workers: 3, partitions: 12, sandbox: fastQuotes });
    cleanups.push(() => cluster.stop());
    const orders = planTestOrders(24, 1);
    for (const order of orders) await cluster.send(order.command);
    // Kill a worker that is not the webhook receiver while quotes and creations are in flight.
    await cluster.collector.waitFor(
      (events) => events.filter((e) => e.type === 'order.created').length >= 4,
      'some orders created',
      90_000,
    );
    const victim = cluster.workers[1];
    expect(victim).toBeDefined();
    await victim!.kill('SIGKILL');
    await completeAll(cluster, orders, 180_000);
    // The survivors took over the victim's partitions and restored its unfinished orders from the state topic.
    const restored = await Promise.all(
      [0, 2].map(async (i) => {
        const text = await (
          await fetch(`http://127.0.0.1:${cluster.workers[i]?.metricsPort ?? 0}/metrics`)
        ).text();
        return Number(/^worker_orders_restored_total (\d+)/m.exec(text)?.[1] ?? 0);
      }),
    );
    expect(restored[0]! + restored[1]!).toBeGreaterThan(0);
    assertExactlyOnce(cluster, orders);
    expect(cluster.sandbox.orders.list()).toHaveLength(orders.length);
  });

  it('a replica paused longer than its lease (SIGSTOP) never drives an order twice once it wakes', async () => {
    const cluster = await startCluster({ workers: 2, partitions: 4, sandbox: fastQuotes });
    cleanups.push(() => cluster.stop());
    const orders = planTestOrders(10, 3);
    for (const order of orders) await cluster.send(order.command);
    await cluster.collector.waitFor(
      (events) => events.filter((e) => e.type === 'order.created').length >= 3,
      'some orders created',
      90_000,
    );
    const sleeper = cluster.workers[1]!;
    sleeper.child.kill('SIGSTOP');
    // Past the consumer session (15 s) and the lease (6 s): the other replica takes over and finishes the orders.
    await completeAll(cluster, orders, 180_000);
    sleeper.child.kill('SIGCONT');
    // Give the woken replica time to do whatever it would do with its stale orders.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    assertExactlyOnce(cluster, orders);
    expect(cluster.sandbox.orders.list()).toHaveLength(orders.length);
  });

  it('Redis restarted empty mid-run loses nothing and duplicates nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'worker-redis-'));
    const redis: LocalRedis = await startLocalRedis({ dir });
    cleanups.push(async () => {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const cluster = await startCluster({
      workers: 2,
      partitions: 4,
      redisUrl: redis.url,
      sandbox: fastQuotes,
    });
    cleanups.push(() => cluster.stop());
    const orders = planTestOrders(12, 2);
    for (const order of orders.slice(0, 6)) await cluster.send(order.command);
    await cluster.collector.waitFor(
      (events) => events.filter((e) => e.type === 'order.created').length >= 2,
      'some orders created',
      90_000,
    );
    await redis.restart();
    for (const order of orders.slice(6)) await cluster.send(order.command);
    await completeAll(cluster, orders, 180_000);
    assertExactlyOnce(cluster, orders);
  });
});
