// The benchmarks' event reader (bench/lib/harness.ts TimedCollector) commits no offsets, so a rebalance (its
// process starved past the session timeout, here another member joining and leaving its group) has it read its
// partitions again from the start: every event must still be counted once.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { TimedCollector } from '../../bench/lib/harness.ts';
import { testKafka } from '../support/kafka-helpers.ts';
import { services, uniqueName } from '../support/services.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';

const cleanups = cleanupsAfterEach();

describe('bench event reader', () => {
  it('counts every event once across rebalances that have it read its partitions from the start again', async () => {
    const kafka = testKafka(services().kafkaBrokers);
    const topic = uniqueName('bench-events');
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const send = (from: number, count: number): Promise<unknown> =>
      producer.send({
        topic,
        messages: Array.from({ length: count }, (_, i) => ({
          key: `order-${from + i}`,
          partition: (from + i) % 2,
          value: JSON.stringify({ type: 'order.created', order_id: `order-${from + i}`, seq: 1 }),
        })),
      });

    const groupId = uniqueName('bench-reader');
    const collector = await TimedCollector.start(kafka, topic, groupId);
    cleanups.push(() => collector.stop());
    await send(0, 10);
    expect(await collector.waitForCount('order.created', 10, 30_000)).toBe(10);

    // Another member joins (the partitions are split between the two) and leaves (the reader takes both back):
    // two rebalances, each with nothing committed to resume from.
    const other = kafka.consumer({ groupId });
    await other.connect();
    const joined = new Promise<void>((resolve) => other.on(other.events.GROUP_JOIN, () => resolve()));
    await other.subscribe({ topic, fromBeginning: true });
    await other.run({ autoCommit: false, eachMessage: () => Promise.resolve() });
    await joined;
    await send(10, 4);
    await sleep(2_000);
    await other.disconnect();
    await send(14, 4);
    expect(await collector.waitForCount('order.created', 18, 30_000)).toBeGreaterThanOrEqual(18);
    // Whatever the reader was handed again after a rebalance has had time to arrive.
    await sleep(3_000);

    // The events the other member took while it was in the group are the reader's to read once it left.
    expect(collector.count('order.created')).toBe(18);
    expect(new Set(collector.events.map((e) => e.order_id)).size).toBe(18);
  });
});
