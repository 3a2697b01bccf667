// Failure tests with real processes: a worker SIGKILLed in the middle of driving orders, and Redis restarted
// empty under running workers. Every order must still finish, with exactly one exchange order each and an event
// history without gaps or repeats.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalRedis, type LocalRedis } from '../../dev/services/index.ts';
import { uniqueName } from '../support/services.ts';
import { planOrders, type PlannedOrder } from '../support/order-specs.ts';
import { startCluster } from '../support/worker-cluster.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';
import { assertExactlyOnce, completeAll } from '../support/order-outcomes.ts';

const cleanups = cleanupsAfterEach();

const fastQuotes = (config: Parameters<NonNullable<Parameters<typeof startCluster>[0]['sandbox']>>[0]) => ({
  ...config,
  quotes: { ttlSeconds: 300, actionableDelayMs: 1_500 },
  limits: { sameChainFixedRateQuotesPerMinute: 10_000, crossChainFixedRateQuotesPerMinute: 10_000 },
});

function planTestOrders(count: number, variant: number): PlannedOrder[] {
  return planOrders(count, { variant, orderId: (i) => uniqueName(`o${i}`) });
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
