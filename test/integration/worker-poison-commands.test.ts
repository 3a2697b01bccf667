// Commands that must never stop a partition: a 2 MB command, a null-keyed one and a mis-keyed one naming an order
// that lives on a partition another replica owns, and one that is not JSON, all in front of good orders on the
// same partition. Each is answered with a small command.rejected (bounded excerpt + hash), the order they name is
// left alone, and every good order behind them completes. Real worker processes, real Kafka and Redis, the sandbox.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_REJECTION_EVENT_BYTES } from '../../src/contract/events.ts';
import { seqProblems, testKafka, type PublishedEvent } from '../support/kafka-helpers.ts';
import { orderCreateCommand } from '../support/order-specs.ts';
import { services, uniqueName } from '../support/services.ts';
import { startCluster, type Cluster } from '../support/worker-cluster.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';

const cleanups = cleanupsAfterEach();

async function assignedPartitions(cluster: Cluster, index: number): Promise<number> {
  const port = cluster.workers[index]?.metricsPort ?? 0;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(/^worker_partitions_owned(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? -1);
}

/** The event as it was published (without the fields the collector adds). */
function publishedBytes(event: PublishedEvent): number {
  const { partition: _p, offset: _o, key: _k, ...value } = event;
  return Buffer.byteLength(JSON.stringify(value));
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('commands that must not stop a partition', () => {
  it('answers a huge, a null-keyed, a mis-keyed and a non-JSON command with small rejections while the good orders behind them complete', async () => {
    const cluster = await startCluster({ workers: 2, partitions: 2 });
    cleanups.push(() => cluster.stop());
    // Let the broker take a 2 MB command (its default limit is 1 MB): the worker must refuse it, not the broker.
    const admin = testKafka(services().kafkaBrokers).admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2, // TOPIC
          name: cluster.topics.commands,
          configEntries: [{ name: 'max.message.bytes', value: String(4 * 1024 * 1024) }],
        },
      ],
    });
    const deadline = Date.now() + 60_000;
    while ((await assignedPartitions(cluster, 0)) !== 1 || (await assignedPartitions(cluster, 1)) !== 1) {
      if (Date.now() > deadline) throw new Error('the two workers did not settle on one partition each');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    // An order on partition 0; the poison commands naming it arrive on partition 1, which the other worker owns.
    const existing = uniqueName('existing');
    await cluster.send(orderCreateCommand('cefi', '1.31', existing), { partition: 0 });
    await cluster.collector.waitForOrderEvent(existing, 'order.created');

    const huge = JSON.stringify({
      ...orderCreateCommand('cefi', '1.32', uniqueName('huge')),
      withdraw_address_extra_id: 'x'.repeat(2 * 1024 * 1024),
    });
    const nullKeyed = JSON.stringify({
      type: 'order.submit_deposit',
      command_id: uniqueName('null-keyed'),
      order_id: existing,
      tx_hash: '0x0123456789abcdef0123',
    });
    const misKeyed = JSON.stringify({
      type: 'order.cancel',
      command_id: uniqueName('mis-keyed'),
      order_id: existing,
    });
    const notJson = '{"type": "order.create", "order_id": ';
    const poison = [
      { raw: huge, key: uniqueName('huge-key'), reason: 'too_large' },
      { raw: nullKeyed, key: null, reason: 'malformed' },
      { raw: misKeyed, key: uniqueName('wrong-key'), reason: 'malformed' },
      { raw: notJson, key: uniqueName('not-json'), reason: 'malformed' },
    ];
    for (const p of poison) await cluster.send({}, { raw: p.raw, key: p.key, partition: 1 });
    const good = ['1.33', '1.34', '1.35'].map((amount) =>
      orderCreateCommand('cefi', amount, uniqueName('good')),
    );
    for (const command of good) await cluster.send(command, { partition: 1 });

    const hashes = new Set(poison.map((p) => sha256(p.raw)));
    const rejections = (): PublishedEvent[] =>
      cluster.collector.events.filter(
        (e) => e.type === 'command.rejected' && hashes.has(String(e['command_sha256'])),
      );
    await cluster.collector.waitFor(() => rejections().length >= poison.length, 'four rejections', 90_000);
    for (const p of poison) {
      const [rejection, ...more] = rejections().filter((e) => e['command_sha256'] === sha256(p.raw));
      expect(more).toEqual([]);
      expect(rejection).toMatchObject({
        reason: p.reason,
        seq: 0,
        command_bytes: Buffer.byteLength(p.raw),
        command_excerpt: p.raw.slice(0, 512),
        source: { topic: cluster.topics.commands, partition: 1 },
      });
      expect(publishedBytes(rejection!)).toBeLessThan(MAX_REJECTION_EVENT_BYTES);
    }
    // The order they named was not touched: its history is its own.
    expect(cluster.collector.of(existing).filter((e) => e.seq > 0 && e.type === 'command.rejected')).toEqual(
      [],
    );
    expect(seqProblems(cluster.collector.of(existing))).toEqual([]);

    for (const command of good) {
      const orderId = String(command['order_id']);
      const created = await cluster.collector.waitForOrderEvent(orderId, 'order.created', 90_000);
      cluster.sandbox.advanceOrder(String(created['unique_reference']), 'completed');
    }
    for (const command of good) {
      const orderId = String(command['order_id']);
      await cluster.collector.waitForOrderEvent(orderId, 'order.completed', 90_000);
      expect(seqProblems(cluster.collector.of(orderId))).toEqual([]);
    }
    for (const worker of cluster.workers) expect(worker.log()).not.toMatch(/"level":(60|"fatal")/);
  });
});
