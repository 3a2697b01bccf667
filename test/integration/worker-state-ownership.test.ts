// Memory that follows ownership, with real worker processes: two replicas each hold the state of their own
// partitions only, a webhook delivered to the replica that does not own its order still reaches the owner, and a
// finished order answers a replayed create as before until FINISHED_ORDER_RETENTION_MS, then leaves the state topic,
// and a create replayed after that is refused (its home is retired), not started again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKafka } from '../support/kafka-helpers.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';

const retentionMs = 45_000;
let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({
    workers: 2,
    partitions: 6,
    env: { FINISHED_ORDER_RETENTION_MS: String(retentionMs) },
  });
});
afterAll(async () => {
  await cluster?.stop();
});

async function metric(metricsPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return Number(line?.split(' ').at(-1) ?? NaN);
}

/** The last value the state topic holds for each key, read from its beginning (null: a tombstone). */
async function stateTopicValues(keys: string[]): Promise<Map<string, string | null>> {
  const kafka = testKafka(services().kafkaBrokers);
  const consumer = kafka.consumer({ groupId: uniqueName('state-reader'), readUncommitted: false });
  await consumer.connect();
  const values = new Map<string, string | null>();
  try {
    await consumer.subscribe({ topic: `${cluster.topics.commands}.state`, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ message }) => {
        const key = message.key?.toString() ?? '';
        if (keys.includes(key)) values.set(key, message.value?.toString() ?? null);
        return Promise.resolve();
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 4_000));
  } finally {
    await consumer.disconnect();
  }
  return values;
}

describe('finished orders, webhook routing and retention across replicas', () => {
  const orderIds = Array.from({ length: 12 }, (_, i) => uniqueName(`own${i}`));

  it('routes every webhook to the owner, whichever replica received it', async () => {
    for (const [i, orderId] of orderIds.entries())
      await cluster.send(orderCreateCommand('cefi', `1.${i + 10}`, orderId));
    const references = await Promise.all(
      orderIds.map(async (orderId) =>
        String(
          (await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000))['unique_reference'],
        ),
      ),
    );
    const known = await Promise.all(cluster.workers.map((w) => metric(w.metricsPort, 'worker_known_orders')));
    // Every replica reads every partition (the order_created_meanwhile check after a wait relies on it).
    expect(known).toEqual([orderIds.length, orderIds.length]);

    // The sandbox sends every webhook to the first replica. Orders confirm well before any poll (30 s) could.
    const startedAt = Date.now();
    for (const reference of references) cluster.sandbox.advanceOrder(reference, 'completed');
    await Promise.all(
      orderIds.map((orderId) => cluster.collector.waitForOrderEvent(orderId, 'order.completed', 25_000)),
    );
    expect(Date.now() - startedAt).toBeLessThan(25_000);
    // No series until a delivery had that result.
    expect(
      (await metric(cluster.workers[0]!.metricsPort, 'worker_webhooks_total{result="unknown_order"}')) || 0,
    ).toBe(0);
  });

  it('skips a replayed create of a finished order, refuses a conflicting one, and tombstones it after the retention', async () => {
    const orderId = orderIds[0]!;
    const replay = orderCreateCommand('cefi', '1.10', orderId);
    await cluster.send(replay);
    await cluster.send({ ...replay, command_id: `${orderId}-conflict`, deposit_amount: '9.99' });
    const rejected = await cluster.collector.waitForOrderEvent(orderId, 'command.rejected', 30_000);
    expect(rejected['reason']).toBe('order_exists');
    expect(rejected['command_id']).toBe(`${orderId}-conflict`);
    const events = cluster.collector.of(orderId);
    expect(events.filter((e) => e.type === 'order.created')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'command.rejected')).toHaveLength(1);

    // The sweep runs every 4.5 s at this retention; the conflict's record restarted the order's retention.
    await new Promise((resolve) => setTimeout(resolve, retentionMs + 8_000));
    const values = await stateTopicValues(orderIds);
    for (const id of orderIds) expect(values.get(id), id).toBeNull();
    const known = await Promise.all(cluster.workers.map((w) => metric(w.metricsPort, 'worker_known_orders')));
    expect(known).toEqual([0, 0]);
  });

  it('refuses a create replayed after the tombstone instead of starting the order again', async () => {
    const orderId = orderIds[1]!;
    const replay = orderCreateCommand('cefi', '1.11', orderId);
    await cluster.send(replay);
    const events = await cluster.collector.waitFor(
      (all) => all.some((e) => e.order_id === orderId && e.type === 'command.rejected'),
      `command.rejected of ${orderId}`,
      30_000,
    );
    const rejected = events.find((e) => e.order_id === orderId && e.type === 'command.rejected')!;
    expect(rejected['reason']).toBe('order_exists');
    expect(rejected['command_id']).toBe(replay['command_id']);
    expect(String(rejected['message'])).toContain('not started again');
    // Had it been taken for a new order, its quote and create would have published order.created within this.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(cluster.collector.of(orderId).filter((e) => e.type === 'order.created')).toHaveLength(1);
    expect((await stateTopicValues([orderId])).get(orderId)).toBeNull();
  });
});
