// The transactional writer against a real broker: a queue larger than a broker accepts in one record batch is
// committed in several transactions, and a write the broker refuses for its size fails alone - the writer and
// everything queued with it carry on (a size refusal must never stop the process).
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import { KafkaClient } from '../../src/kafka/kafka-client.ts';
import { TransactionalWriter } from '../../src/kafka/transactional-writer.ts';
import { zstdTotals } from '../../src/kafka/zstd-codec.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { services, uniqueName } from '../support/services.ts';
import { cleanupsAfterEach } from '../support/cleanups.ts';

const cleanups = cleanupsAfterEach();

async function setup(maxMessageBytes: number): Promise<{ kafka: Kafka; topic: string; fatal: Error[] }> {
  const kafka = new Kafka({
    clientId: uniqueName('writer'),
    brokers: services().kafkaBrokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 200 },
  });
  const topic = uniqueName('writer');
  const admin = kafka.admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  await admin.createTopics({
    topics: [
      {
        topic,
        numPartitions: 2,
        configEntries: [{ name: 'max.message.bytes', value: String(maxMessageBytes) }],
      },
    ],
    waitForLeaders: true,
  });
  cleanups.push(() => admin.deleteTopics({ topics: [topic] }));
  return { kafka, topic, fatal: [] };
}

async function countCommitted(kafka: Kafka, topic: string, expected: number): Promise<number> {
  const consumer = kafka.consumer({ groupId: uniqueName('reader'), readUncommitted: false });
  await consumer.connect();
  cleanups.push(() => consumer.disconnect());
  let count = 0;
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: () => {
      count++;
      return Promise.resolve();
    },
  });
  const deadline = Date.now() + 30_000;
  while (count < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1_000));
  return count;
}

function writer(
  kafka: Kafka,
  fatal: Error[],
  transactionalId = uniqueName('tx'),
  compressedTopics: string[] = [],
  consumerGroupId = uniqueName('group'),
): TransactionalWriter {
  const w = new TransactionalWriter({
    compressedTopics,
    kafka: KafkaClient.wrap(kafka),
    transactionalId,
    consumerGroupId,
    transactionTimeoutMs: 10_000,
    logger: createLogger({ level: 'silent' }),
    onFatal: (error) => fatal.push(error),
  });
  cleanups.push(() => w.close());
  return w;
}

/** A writer committing offsets for a group of its own, and that group's committed offsets by partition. */
async function offsetWriter(
  kafka: Kafka,
  fatal: Error[],
  topic: string,
): Promise<{
  w: TransactionalWriter;
  committed: () => Promise<Record<number, string>>;
  committedOnceAt: (partition: number, expected: string) => Promise<string | undefined>;
}> {
  const group = uniqueName('group');
  const w = writer(kafka, fatal, uniqueName('tx'), [], group);
  await w.connect();
  const admin = kafka.admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  const committed = async (): Promise<Record<number, string>> => {
    const [entry] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return Object.fromEntries((entry?.partitions ?? []).map((p) => [p.partition, p.offset]));
  };
  // A transaction's offsets reach the group a moment after its commit answers (the coordinator writes the commit
  // markers afterwards): a committed offset is read until it shows the expected one, for up to 5 s.
  const committedOnceAt = async (partition: number, expected: string): Promise<string | undefined> => {
    for (let attempt = 0; attempt < 50; attempt++) {
      const offset = (await committed())[partition];
      if (offset === expected) return offset;
      await sleep(100);
    }
    return (await committed())[partition];
  };
  return { w, committed, committedOnceAt };
}

describe('transactional writer', () => {
  it('sends the topics it is told to zstd-compressed, readable by our consumers, and the others plain', async () => {
    const { kafka, topic, fatal } = await setup(1_048_588);
    const w = writer(kafka, fatal, uniqueName('tx'), [topic]);
    await w.connect();
    const record = (i: number): string =>
      JSON.stringify({
        order_id: `order-${i}`,
        machine: { context: { config: { pollIntervalMs: 30_000 } } },
      });
    const before = { ...zstdTotals };
    const writes = Array.from({ length: 50 }, (_, i) =>
      w.write([{ topic, key: `order-${i}`, partition: i % 2, value: record(i) }]),
    );
    expect(await Promise.all(writes)).toEqual(writes.map(() => true));
    expect(zstdTotals.batches).toBeGreaterThan(before.batches);
    expect(zstdTotals.bytesOut - before.bytesOut).toBeLessThan((zstdTotals.bytesIn - before.bytesIn) / 3);
    // Records of another topic in the same writer are not compressed.
    const { topic: plain } = await setup(1_048_588);
    const afterCompressed = zstdTotals.batches;
    expect(await w.write([{ topic: plain, key: 'k', partition: 0, value: record(0) }])).toBe(true);
    expect(zstdTotals.batches).toBe(afterCompressed);
    // A consumer of ours reads them back whole.
    const seen = new Map<string, string>();
    const consumer = kafka.consumer({ groupId: uniqueName('reader'), readUncommitted: false });
    await consumer.connect();
    cleanups.push(() => consumer.disconnect());
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ message }) => {
        seen.set(message.key?.toString() ?? '', message.value?.toString() ?? '');
        return Promise.resolve();
      },
    });
    const deadline = Date.now() + 30_000;
    while (seen.size < 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(seen.size).toBe(50);
    expect(seen.get('order-7')).toBe(record(7));
    expect(fatal).toEqual([]);
  });

  it('sends a small transaction of state records and events in one uncompressed produce call, a large one in two', async () => {
    const { kafka, topic: state, fatal } = await setup(1_048_588);
    const { topic: events } = await setup(1_048_588);
    // What the writer's transactions send, call by call (the topics of each sendBatch and its compression).
    const calls: Array<{ topics: string[]; compression: number | undefined }> = [];
    const producer = kafka.producer.bind(kafka);
    kafka.producer = (config) => {
      const real = producer(config);
      const transaction = real.transaction.bind(real);
      real.transaction = async () => {
        const tx = await transaction();
        const sendBatch = tx.sendBatch.bind(tx);
        tx.sendBatch = (batch) => {
          calls.push({
            topics: batch.topicMessages?.map((m) => m.topic) ?? [],
            compression: batch.compression,
          });
          return sendBatch(batch);
        };
        return tx;
      };
      return real;
    };
    const w = writer(kafka, fatal, uniqueName('tx'), [state]);
    await w.connect();
    const stateRecord = (i: number, padding: number): string =>
      JSON.stringify({ order_id: `order-${i}`, machine: { pad: 'x'.repeat(padding) } });
    const event = (i: number) => ({
      topic: events,
      key: `order-${i}`,
      partition: 0,
      value: JSON.stringify({ type: 'e', order_id: `order-${i}` }),
    });
    const before = { ...zstdTotals };
    // One order's change: its state record (2.5 KB) and its event.
    expect(
      await w.write([event(1), { topic: state, key: 'order-1', partition: 0, value: stateRecord(1, 2_500) }]),
    ).toBe(true);
    expect(calls).toEqual([{ topics: [events, state], compression: undefined }]);
    expect(zstdTotals.batches).toBe(before.batches);
    // Many orders' changes in one transaction (20 KB of state records): compressed apart, as under load.
    calls.length = 0;
    expect(
      await w.write([
        event(2),
        ...Array.from({ length: 8 }, (_, i) => ({
          topic: state,
          key: `order-${i + 2}`,
          partition: i % 2,
          value: stateRecord(i + 2, 2_500),
        })),
      ]),
    ).toBe(true);
    expect(calls).toEqual([
      { topics: [events], compression: undefined },
      { topics: [state], compression: CompressionTypes.ZSTD },
    ]);
    expect(zstdTotals.batches).toBeGreaterThan(before.batches);
    // Both kinds read back whole by a read_committed consumer.
    expect(await countCommitted(kafka, state, 9)).toBe(9);
    expect(await countCommitted(kafka, events, 2)).toBe(2);
    expect(fatal).toEqual([]);
  });

  it('commits a queue larger than one record batch may be in several transactions', async () => {
    // 600 open orders restored at once, 4 KB each: 2.4 MB for one partition.
    const { kafka, topic, fatal } = await setup(1_048_588);
    const w = writer(kafka, fatal);
    await w.connect();
    const writes = Array.from({ length: 600 }, (_, i) =>
      w.write([
        { topic, key: `order-${i}`, partition: 0, value: JSON.stringify({ i, pad: 'x'.repeat(4_000) }) },
      ]),
    );
    expect(await Promise.all(writes)).toEqual(writes.map(() => true));
    expect(fatal).toEqual([]);
    expect(w.committedTransactions).toBeGreaterThan(1);
    expect(await countCommitted(kafka, topic, 600)).toBe(600);
  });

  it('commits nothing of a write whose guard lapses after its records were sent (a pause before the commit)', async () => {
    const { kafka, topic, fatal } = await setup(1_048_588);
    const w = writer(kafka, fatal);
    await w.connect();
    // The lease holds at the first check, and no longer at the last one before the commit.
    let checks = 0;
    const lapsing = w.write([{ topic, key: 'lapsed', partition: 0, value: 'from-a-stale-owner' }], [], () => {
      checks++;
      return checks === 1;
    });
    const other = w.write([{ topic, key: 'fine', partition: 1, value: 'still-ours' }], [], () => true);
    expect(await lapsing).toBe(false);
    expect(await other).toBe(true);
    expect(fatal).toEqual([]);
    expect(await countCommitted(kafka, topic, 1)).toBe(1);
  });

  it('commits no offset past a refused write until that command is written again (pipelined commands)', async () => {
    const { kafka, topic, fatal } = await setup(1_048_588);
    const { w, committed, committedOnceAt } = await offsetWriter(kafka, fatal, topic);
    const at = (partition: number, offset: number) => ({ topic, partition, offset: String(offset) });
    // Commands 10, 11 and 12 of partition 0 handled one after the other before any committed; 10's order lost its
    // lease. 11's records are written (its own order's lease holds) but no offset of partition 0 past 9 commits.
    const refused = w.write([{ topic, key: 'a', partition: 0, value: '10' }], [at(0, 10)], () => false);
    const later = w.write([{ topic, key: 'b', partition: 0, value: '11' }], [at(0, 11)], () => true);
    const skipped = w.write([], [at(0, 12)]);
    const otherPartition = w.write([], [at(1, 5)]);
    expect(await refused).toBe(false);
    expect(await later).toBe(true);
    expect(await skipped).toBe(true);
    expect(await otherPartition).toBe(true);
    expect(w.offsetHold(topic, 0)).toBe('10');
    expect(await committedOnceAt(1, '6')).toBe('6');
    expect(await committed()).toEqual({ 0: '-1', 1: '6' });
    // Delivered again from 10: written this time, and the partition's offsets move on.
    expect(
      await w.write([{ topic, key: 'a', partition: 0, value: '10 again' }], [at(0, 10)], () => true),
    ).toBe(true);
    expect(w.offsetHold(topic, 0)).toBeUndefined();
    expect(await committedOnceAt(0, '11')).toBe('11');
    // 11 and 12 come again and are recognised as handled: only their offsets are committed.
    await w.write([], [at(0, 11)]);
    await w.write([], [at(0, 12)]);
    expect(await committedOnceAt(0, '13')).toBe('13');
    expect(await countCommitted(kafka, topic, 2)).toBe(2);
    expect(fatal).toEqual([]);
  });

  it('releases an offset hold when the partition is assigned anew, after the writes queued before', async () => {
    const { kafka, topic, fatal } = await setup(1_048_588);
    const offsets = await offsetWriter(kafka, fatal, topic);
    const { w } = offsets;
    const committed = async (): Promise<string | undefined> => (await offsets.committed())[0];
    const at = (offset: number) => ({ topic, partition: 0, offset: String(offset) });
    const refused = w.write([{ topic, key: 'a', partition: 0, value: '3' }], [at(3)], () => false);
    const queuedBefore = w.write([], [at(4)]);
    const released = w.releaseOffsetHolds(topic, [0]);
    expect(await refused).toBe(false);
    expect(await queuedBefore).toBe(true);
    await released;
    // The write queued before the release stayed held; the new assignment's commands commit again.
    expect(await committed()).toBe('-1');
    expect(w.offsetHold(topic, 0)).toBeUndefined();
    expect(await w.write([], [at(7)])).toBe(true);
    expect(await offsets.committedOnceAt(0, '8')).toBe('8');
    expect(fatal).toEqual([]);
  });

  it('fails only the write the broker refuses for its size and keeps writing', async () => {
    const { kafka, topic, fatal } = await setup(200_000);
    const w = writer(kafka, fatal);
    await w.connect();
    const before = w.write([{ topic, key: 'a', partition: 0, value: 'small-1' }]);
    const huge = w.write([{ topic, key: 'b', partition: 0, value: 'x'.repeat(300_000) }]);
    const after = w.write([{ topic, key: 'c', partition: 1, value: 'small-2' }]);
    await expect(huge).rejects.toMatchObject({ code: 'kafka_record_too_large' });
    expect(await before).toBe(true);
    expect(await after).toBe(true);
    expect(await w.write([{ topic, key: 'd', partition: 0, value: 'small-3' }])).toBe(true);
    expect(fatal).toEqual([]);
    expect(w.oversizedWrites).toBe(1);
    expect(await countCommitted(kafka, topic, 3)).toBe(3);
  });

  it('gives up when fenced by a live process with its transactional id, without fencing that process in turn', async () => {
    const { kafka, topic } = await setup(1_048_588);
    const id = uniqueName('tx');
    const olderFatal: Error[] = [];
    const newerFatal: Error[] = [];
    const older = writer(kafka, olderFatal, id);
    await older.connect();
    expect(await older.write([{ topic, key: 'a', partition: 0, value: 'older-1' }])).toBe(true);
    const newer = writer(kafka, newerFatal, id);
    await newer.connect();
    expect(await newer.write([{ topic, key: 'b', partition: 0, value: 'newer-1' }])).toBe(true);
    await expect(older.write([{ topic, key: 'c', partition: 0, value: 'older-2' }])).rejects.toThrow();
    expect(olderFatal).toHaveLength(1);
    expect(await newer.write([{ topic, key: 'd', partition: 0, value: 'newer-2' }])).toBe(true);
    expect(newerFatal).toEqual([]);
  });
});
